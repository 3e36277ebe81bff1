import Foundation
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// What the users of one ``SessionStore`` take turns on: its saves and loads, and its refreshes.
///
/// Within the process, a mutex orders saves and loads. Across processes (an app and its
/// extension), and across stacks that each opened the store, an advisory lock on a file beside
/// the store does, held only for the save or load itself. Without files (a store that isn't on
/// disk) only the mutex remains.
///
/// A refresh takes turns by a *lease*, not a lock: a file beside the lock file (its path with
/// `.refresh` appended, and `.NAME` for an account with a name, so that refreshes of different
/// accounts don't wait for each other) that names the holder's process and a deadline, written
/// and removed under the short lock. No lock is held while the server is asked: iOS terminates a suspended
/// app that holds a file lock in a shared container, and a lease a suspended or crashed holder
/// leaves behind ends at its deadline, or as soon as its process is gone.
package final class SessionLock: Sendable {
    private let mutex = Lock()
    /// The lock file around saves and loads, and around the lease's own reads and writes.
    let path: String?
    /// The lease file of refreshes.
    var refreshPath: String? { path.map { $0 + ".refresh" } }
    /// How long a lease lasts: longer than any refresh should take.
    static let leaseDuration: TimeInterval = 60

    init(path: String?) {
        self.path = path
    }

    /// Runs `body` while no other save or load of the store runs.
    ///
    /// NB: the file lock is taken when it can be; a directory this user can't write has no
    /// writers of this user to exclude, and reading it must still work.
    func withLock<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        try mutex.withLock { () throws(E) -> R in
            let fd = path.flatMap(FileSystem.lockFile)
            defer { if let fd { FileSystem.unlockFile(fd) } }
            return try body()
        }
    }

    /// A refresh's lease: its file, and what this holder wrote in it.
    struct Lease: Sendable {
        let path: String
        let holder: String
    }

    /// The lease file of refreshes of the account named `name`: `refreshPath` for `""` (one
    /// account that isn't `Identifiable`), with `.NAME` appended otherwise (the name made a file
    /// name as the secrets' files are, `FileSystem.fileName(for:)`).
    func refreshPath(for name: String) -> String? {
        guard let refreshPath, !name.isEmpty else { return refreshPath }
        return refreshPath + "." + FileSystem.fileName(for: name)
    }

    /// Waits until no other process or stack holds the lease of refreshes of the account named
    /// `name`, then takes it; returns the lease to hand back to ``endRefresh(_:)``. `nil` when
    /// the store has no files, when the lease can't be written (a read-only directory: there is
    /// nobody to take turns with), or when the task is cancelled.
    func beginRefresh(for name: String) async -> Lease? {
        guard let path = refreshPath(for: name) else { return nil }
        let holder = "\(getpid()) \(UUID().uuidString)"
        while true {
            let taken: Bool? = withLock {
                if let current = Self.leaseHolder(path), Self.isHeld(current) { return false }
                let deadline = Int(Date().timeIntervalSince1970 + Self.leaseDuration)
                return (try? FileSystem.writeAtomically(Data("\(holder) \(deadline)\n".utf8), to: path)) == nil ? nil : true
            }
            guard let taken else { return nil }
            if taken { return Lease(path: path, holder: holder) }
            do { try await Task.sleep(for: .milliseconds(10)) } catch { return nil }
        }
    }

    /// Hands the lease back, if it is still this one's.
    func endRefresh(_ lease: Lease?) {
        guard let lease else { return }
        withLock {
            if Self.leaseHolder(lease.path)?.hasPrefix(lease.holder + " ") == true { try? FileSystem.remove(lease.path) }
        }
    }

    /// What the lease file says, if it can be read.
    private static func leaseHolder(_ path: String) -> String? {
        guard let data = (try? FileSystem.read(path, limit: 1024)) ?? nil else { return nil }
        return String(decoding: data, as: UTF8.self)
    }

    /// Whether the lease `holder` ("PID NONCE DEADLINE") still holds: its deadline hasn't passed
    /// and its process is alive.
    package static func isHeld(_ holder: String) -> Bool {
        let fields = holder.split(separator: " ")
        guard fields.count == 3, let pid = Int32(fields[0]), let deadline = Int(fields[2].trimmingCharacters(in: .whitespacesAndNewlines)) else {
            return false
        }
        guard Double(deadline) > Date().timeIntervalSince1970 else { return false }
        return kill(pid, 0) == 0 || errno != ESRCH
    }
}
