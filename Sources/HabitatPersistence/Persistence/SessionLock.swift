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
/// accounts don't wait for each other) that names the holder's process, a deadline and a
/// fingerprint of the refresh token it is spending, written and removed under the short lock. No
/// lock is held while the server is asked: iOS terminates a suspended app that holds a file lock
/// in a shared container.
///
/// The lease is also the record that a token may be spent. Its holder removes it only when the
/// token wasn't sent, or the store holds its successor; a lease left in place (a session that
/// ended, a holder killed, suspended, or slower than the lease) goes on naming the token once it
/// lapses, and the next refresher of that token finds it spent: it ends the session rather than
/// send the token a second time (a refresh token is sent upstream at most once).
package final class SessionLock: Sendable {
    private let mutex = LockedBox(())
    /// The lock file around saves and loads, and around the lease's own reads and writes.
    let path: String?
    /// The lock file's directory, opened once and checked like a store's
    /// (`TrustedDirectory`); `nil` without files, or when it can't be opened or trusted:
    /// then only the mutex orders this process's saves and loads.
    private let directory: TrustedDirectory?
    /// Why the lock file's directory couldn't be opened or trusted, when there is a lock file.
    let problem: StoreError?
    /// The lock file's name in `directory`.
    private let name: String
    /// How long a lease lasts: longer than any refresh should take. A lease file that names a
    /// later deadline was not written by Habitat, and holds nothing.
    let leaseDuration: TimeInterval

    /// Waits between two looks at a lease another holds: 10 ms by default. The session
    /// explorer's parks the waiting refresh until the explorer lets it look again.
    private let pause: @Sendable () async throws -> Void

    package init(path: String?, leaseDuration: Duration = .seconds(60), pause: @escaping @Sendable () async throws -> Void = { try await Task.sleep(for: .milliseconds(10)) }) {
        self.path = path
        self.pause = pause
        name = path.map { ($0 as NSString).lastPathComponent } ?? ""
        self.leaseDuration = Double(leaseDuration.components.seconds) + Double(leaseDuration.components.attoseconds) / 1e18
        var problem: StoreError?
        directory = path.flatMap { path in
            do throws(StoreError) {
                return try TrustedDirectory.open((path as NSString).deletingLastPathComponent, create: false, forSecrets: false)
            } catch {
                problem = error
                return nil
            }
        }
        self.problem = problem
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
        /// The fingerprint of the token it spends.
        let token: String
    }

    /// What a refresher found when its turn came.
    enum Turn: Sendable {
        /// The lease is this refresher's.
        case held(Lease)
        /// A lease that lapsed without its holder saying how its refresh ended names the same
        /// token: it may have been sent already, so it must not be sent again.
        case spent
        /// There is no file to take turns on (a store without files): only this process's
        /// stacks share the token, and they take turns in memory.
        case unshared
        /// The lock file's directory can't be trusted, or the lease can't be written: the
        /// refresh can't take its turn, so it asks nothing.
        case refused(StoreError)
    }

    /// The lease file of refreshes of the account named `name`: the lock file's name with
    /// `.refresh` appended, and `.NAME` for an account with a name (made a file name as the
    /// secrets' files are, `FileSystem.fileName(for:)`).
    private func refreshName(for account: String) -> String {
        account.isEmpty ? name + ".refresh" : name + ".refresh." + FileSystem.fileName(for: account)
    }

    /// Waits until no other process or stack holds the lease of refreshes of the account named
    /// `account`, then takes it for the token whose fingerprint is `token`
    /// (`Self.fingerprint(of:)`). `.spent` when a lease that lapsed names that token;
    /// `.refused` when the lease can't be trusted or written, or the task is cancelled.
    func beginRefresh(for account: String, token: String) async -> Turn {
        guard path != nil else { return .unshared }
        guard let directory else { return .refused(problem ?? .unavailable(key: name, reason: "the lock file's directory can't be opened")) }
        let lease = refreshName(for: account)
        let holder = "\(getpid()) \(UUID().uuidString)"
        while true {
            let turn: Turn? = withLock {
                let found = Self.leaseHolder(lease, in: directory)
                if let found, isHeld(found) { return nil }
                if let found, Self.fields(of: found)?.token == token { return .spent }
                let deadline = String(format: "%.3f", Date().timeIntervalSince1970 + leaseDuration)
                do throws(StoreError) {
                    try FileSystem.writeAtomically(Data("\(holder) \(deadline) \(token)\n".utf8), to: lease, in: directory)
                    return .held(Lease(name: lease, holder: holder, token: token))
                } catch {
                    return .refused(error)
                }
            }
            if let turn { return turn }
            do { try await pause() } catch { return .refused(.unavailable(key: lease, reason: "cancelled while waiting for the lease")) }
        }
    }

    /// Whether `lease` is still this holder's and hasn't lapsed: the fence a refresh's answer
    /// passes before the stack takes it.
    func holds(_ lease: Lease) -> Bool {
        guard let directory else { return false }
        return withLock {
            guard let found = Self.leaseHolder(lease.name, in: directory) else { return false }
            return found.hasPrefix(lease.holder + " ") && isHeld(found)
        }
    }

    /// Hands the lease back when `release` says so: the token wasn't sent, or its successor is
    /// saved. Otherwise the lease stays, lapsed, and goes on naming the token as spent.
    /// NB: a lease kept as a mark is made lapsed at once: the next refresher of that token finds
    /// it spent without waiting out the deadline, and one of another token takes it over.
    func endRefresh(_ lease: Lease, release: Bool) {
        guard let directory else { return }
        withLock {
            guard Self.leaseHolder(lease.name, in: directory)?.hasPrefix(lease.holder + " ") == true else { return }
            if release {
                try? FileSystem.remove(lease.name, in: directory)
            } else {
                let now = String(format: "%.3f", Date().timeIntervalSince1970)
                try? FileSystem.writeAtomically(Data("\(lease.holder) \(now) \(lease.token)\n".utf8), to: lease.name, in: directory)
            }
        }
    }

    /// What the lease file says, if it can be read.
    private static func leaseHolder(_ name: String, in directory: TrustedDirectory) -> String? {
        guard let data = (try? FileSystem.read(name, in: directory, limit: 1024)) ?? nil else { return nil }
        return String(decoding: data, as: UTF8.self)
    }

    /// The fields of a lease file, "PID NONCE DEADLINE TOKEN", the deadline in seconds since
    /// 1970 to the millisecond (TOKEN is missing in leases
    /// written before it was recorded); `nil` when it isn't one.
    private static func fields(of holder: String) -> (pid: Int32, deadline: Double, token: String?)? {
        let fields = holder.split(whereSeparator: \.isWhitespace)
        guard fields.count == 3 || fields.count == 4, let pid = Int32(fields[0]), pid > 0, let deadline = Double(fields[2]), deadline.isFinite else { return nil }
        return (pid, deadline, fields.count == 4 ? String(fields[3]) : nil)
    }

    /// Whether the lease `holder` still holds: its deadline hasn't passed, is no further away
    /// than a lease lasts (a planted far deadline holds nothing), and its process is alive.
    package func isHeld(_ holder: String) -> Bool {
        guard let fields = Self.fields(of: holder) else { return false }
        let now = Date().timeIntervalSince1970
        guard fields.deadline > now, fields.deadline <= now + leaseDuration + 1 else { return false }
        return kill(fields.pid, 0) == 0 || errno != ESRCH
    }

    /// A refresh token's fingerprint for its lease: FNV-1a, 64 bits, in hex. The lease file
    /// must say which token it spends without holding it; a 64-bit digest of a random token
    /// gives nothing back.
    static func fingerprint(of token: AuthToken) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in token.secret.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return String(hash, radix: 16)
    }
}
