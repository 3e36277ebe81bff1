import Habitat
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
    private let mutex = LockedBox(())
    /// The lock file around saves and loads, and around the lease's own reads and writes.
    let path: String?
    /// The lock file's directory, opened once and checked like a store's
    /// (`TrustedDirectory`); `nil` without files, or when it can't be opened or trusted:
    /// then only the mutex orders this process's saves and loads.
    private let directory: TrustedDirectory?
    /// The lock file's name in `directory`.
    private let name: String
    /// The lease file of refreshes.
    var refreshPath: String? { directory == nil ? nil : path.map { $0 + ".refresh" } }
    /// How long a lease lasts: longer than any refresh should take. A lease file that names a
    /// later deadline was not written by Habitat, and holds nothing.
    static let leaseDuration: TimeInterval = 60

    init(path: String?) {
        self.path = path
        name = path.map { ($0 as NSString).lastPathComponent } ?? ""
        directory = path.flatMap { try? TrustedDirectory.open(($0 as NSString).deletingLastPathComponent, create: false, forSecrets: false) }
    }

    /// Runs `body` while no other save or load of the store runs.
    ///
    /// NB: the file lock is taken when it can be; a directory this user can't write has no
    /// writers of this user to exclude, and reading it must still work.
    func withLock<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        try mutex.withLock { () throws(E) -> R in
            let fd = directory.flatMap { FileSystem.lockFile(name, in: $0) }
            defer { if let fd { FileSystem.unlockFile(fd) } }
            return try body()
        }
    }

    /// A refresh's lease: its file's name, and what this holder wrote in it.
    struct Lease: Sendable {
        let name: String
        let holder: String
    }

    /// The lease file of refreshes of the account named `name`: the lock file's name with
    /// `.refresh` appended, and `.NAME` for an account with a name (made a file name as the
    /// secrets' files are, `FileSystem.fileName(for:)`).
    private func refreshName(for account: String) -> String {
        account.isEmpty ? name + ".refresh" : name + ".refresh." + FileSystem.fileName(for: account)
    }

    /// Waits until no other process or stack holds the lease of refreshes of the account named
    /// `name`, then takes it; returns the lease to hand back to `endRefresh(_:)`. `nil` when
    /// the store has no files, when the lease can't be written (a read-only directory: there is
    /// nobody to take turns with), or when the task is cancelled.
    func beginRefresh(for account: String) async -> Lease? {
        guard let directory else { return nil }
        let lease = refreshName(for: account)
        let holder = "\(getpid()) \(UUID().uuidString)"
        while true {
            let taken: Bool? = withLock {
                if let current = Self.leaseHolder(lease, in: directory), Self.isHeld(current) { return false }
                let deadline = Int(Date().timeIntervalSince1970 + Self.leaseDuration)
                return (try? FileSystem.writeAtomically(Data("\(holder) \(deadline)\n".utf8), to: lease, in: directory)) == nil ? nil : true
            }
            guard let taken else { return nil }
            if taken { return Lease(name: lease, holder: holder) }
            do { try await Task.sleep(for: .milliseconds(10)) } catch { return nil }
        }
    }

    /// Hands the lease back, if it is still this one's.
    func endRefresh(_ lease: Lease?) {
        guard let lease, let directory else { return }
        withLock {
            if Self.leaseHolder(lease.name, in: directory)?.hasPrefix(lease.holder + " ") == true { try? FileSystem.remove(lease.name, in: directory) }
        }
    }

    /// What the lease file says, if it can be read.
    private static func leaseHolder(_ name: String, in directory: TrustedDirectory) -> String? {
        guard let data = (try? FileSystem.read(name, in: directory, limit: 1024)) ?? nil else { return nil }
        return String(decoding: data, as: UTF8.self)
    }

    /// Whether the lease `holder` ("PID NONCE DEADLINE") still holds: its deadline hasn't passed,
    /// is no further away than a lease lasts (a planted far deadline holds nothing), and its
    /// process is alive.
    package static func isHeld(_ holder: String) -> Bool {
        let fields = holder.split(separator: " ")
        guard fields.count == 3, let pid = Int32(fields[0]), let deadline = Int(fields[2].trimmingCharacters(in: .whitespacesAndNewlines)) else {
            return false
        }
        let now = Date().timeIntervalSince1970
        guard Double(deadline) > now, Double(deadline) <= now + leaseDuration + 1 else { return false }
        return kill(pid, 0) == 0 || errno != ESRCH
    }
}
