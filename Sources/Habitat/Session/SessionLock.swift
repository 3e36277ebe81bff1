import Dispatch

/// What the users of one ``SessionStore`` take turns on: its saves and loads (briefly), and its
/// refreshes (for as long as the server takes).
///
/// Within the process, a mutex orders saves and loads. Across processes (an app and its
/// extension), and across stacks that each opened the store, advisory locks on two files
/// beside the store do: the lock file around each save and load, and the same path with
/// `.refresh` appended around a refresh. Without files (a store that isn't on disk) only the mutex remains.
final class SessionLock: Sendable {
    private let mutex = Lock()
    /// The lock file around saves and loads.
    let path: String?
    /// The lock file around refreshes.
    var refreshPath: String? { path.map { $0 + ".refresh" } }

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

    /// Waits, without holding up a thread of the caller's executor, until no other process or
    /// stack refreshes this store's session; `nil` when there is no refresh lock file, or it
    /// can't be opened. Hand the result to ``endRefresh(_:)``.
    func beginRefresh() async -> Int32? {
        guard let refreshPath else { return nil }
        // NB: flock blocks; a thread of the global queue waits in it rather than a thread of
        // the cooperative pool.
        return await withCheckedContinuation { (continuation: CheckedContinuation<Int32?, Never>) in
            DispatchQueue.global().async {
                continuation.resume(returning: FileSystem.lockFile(refreshPath))
            }
        }
    }

    func endRefresh(_ fd: Int32?) {
        if let fd { FileSystem.unlockFile(fd) }
    }
}
