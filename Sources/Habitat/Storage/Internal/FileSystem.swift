import Foundation

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The few POSIX file operations the stores need, with errors as ``StoreError``s that name the
/// path and never the contents.
///
/// Nothing here trusts what it finds on disk: files are opened without following symbolic links
/// and must be regular files within a size limit (a FIFO would block an `open` forever, a device
/// would feed a read without end), and a directory that holds secrets or a store's lock must be
/// the user's own and writable by nobody else, as OpenSSH's `StrictModes` asks of `~/.ssh`.
enum FileSystem {
    /// `name` as a file name: anything but ASCII letters, digits, `.`, `-` and `_`
    /// percent-encoded, and a leading `.` too, so no name is a hidden file or leaves its
    /// directory; `"%"` for an empty name.
    static func fileName(for name: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(name.utf8.count)
        for byte in name.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
                bytes.append(byte)
            case UInt8(ascii: ".") where !bytes.isEmpty:
                bytes.append(byte)
            default:
                bytes.append(contentsOf: [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]])
            }
        }
        return bytes.isEmpty ? "%" : String(decoding: bytes, as: UTF8.self)
    }

    /// The message for the current `errno`.
    static func lastError() -> String {
        String(cString: strerror(errno))
    }

    // MARK: Directories

    /// Makes sure `directory` exists (creating it, and its parents, owner-only when allowed) and
    /// can be trusted: see ``checkTrusted(directory:)``.
    static func ensureDirectory(_ directory: URL, create: Bool) throws(StoreError) {
        let path = directory.path
        var status = stat()
        if lstat(path, &status) != 0 {
            guard errno == ENOENT else { throw .unreadable(path: path, reason: lastError()) }
            guard create else { throw .missingDirectory(path: path) }
            try makeDirectories(path)
        }
        try checkTrusted(directory: path)
    }

    /// Creates `path` and its missing parents, owner-only. NB: `mkdir` itself, not
    /// FileManager, so a failure says the system's reason and which directory it was.
    private static func makeDirectories(_ path: String) throws(StoreError) {
        var missing: [String] = []
        var current = path
        var status = stat()
        while current.count > 1, lstat(current, &status) != 0, errno == ENOENT {
            missing.append(current)
            current = (current as NSString).deletingLastPathComponent
        }
        for directory in missing.reversed() where mkdir(directory, 0o700) != 0 && errno != EEXIST {
            let reason = lastError()
            let which = directory == path ? "" : " \(directory)"
            throw .unwritable(path: path, reason: "cannot create the directory\(which): \(reason)")
        }
    }

    /// Refuses a directory that someone else could change under the store: one that is a
    /// symbolic link, not a directory, not owned by this user, or writable by group or others.
    static func checkTrusted(directory path: String) throws(StoreError) {
        var status = stat()
        guard lstat(path, &status) == 0 else {
            if errno == ENOENT { throw .missingDirectory(path: path) }
            throw .unreadable(path: path, reason: lastError())
        }
        let kind = status.st_mode & S_IFMT
        if kind == S_IFLNK {
            throw .untrustedDirectory(path: path, reason: "it is a symbolic link")
        }
        guard kind == S_IFDIR else {
            throw .unwritable(path: path, reason: "it exists and is not a directory")
        }
        guard status.st_uid == geteuid() else {
            throw .untrustedDirectory(path: path, reason: "it is owned by uid \(status.st_uid), not by this user (uid \(geteuid()))")
        }
        if status.st_mode & (S_IWGRP | S_IWOTH) != 0 {
            let mode = String(status.st_mode & 0o7777, radix: 8)
            // NB: a sticky shared directory (/tmp) is meant for everyone: tightening it would
            // harm the system. The fix is a directory of one's own.
            let fix = status.st_mode & S_ISVTX != 0
                ? "it is a shared directory (mode \(mode)) that others can write to; keep the store in a directory of your own inside it"
                : "it is writable by group or others (mode \(mode)); make it 0700"
            throw .untrustedDirectory(path: path, reason: fix)
        }
    }

    // MARK: Opening files

    /// Opens `path` with `flags`, never through a symbolic link and never anything but a regular
    /// file. Returns the descriptor and the file's size then, or `nil` when the file does not
    /// exist (and `flags` don't create it).
    private static func openRegularFile(
        _ path: String,
        _ flags: Int32,
        reading: Bool
    ) throws(StoreError) -> (fd: Int32, size: Int)? {
        // NB: O_NONBLOCK, so that a FIFO planted in the file's place can't block the open; it
        // changes nothing for a regular file.
        let fd = open(path, flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            let code = errno
            if code == ENOENT { return nil }
            if code == ELOOP { throw .notARegularFile(path: path, found: "a symbolic link") }
            let reason = String(cString: strerror(code))
            throw reading ? .unreadable(path: path, reason: reason) : .unwritable(path: path, reason: reason)
        }
        var status = stat()
        guard fstat(fd, &status) == 0 else {
            let reason = lastError()
            close(fd)
            throw .unreadable(path: path, reason: reason)
        }
        let kind = status.st_mode & S_IFMT
        guard kind == S_IFREG else {
            close(fd)
            throw .notARegularFile(path: path, found: describeKind(kind))
        }
        return (fd, Int(status.st_size))
    }

    /// Throws when a directory is at `path` (a store's URL naming its directory, not its file).
    /// Other kinds of file are refused when read or written, where a planted one is met.
    static func checkNotADirectory(_ path: String) throws(StoreError) {
        var status = stat()
        guard lstat(path, &status) == 0, status.st_mode & S_IFMT == S_IFDIR else { return }
        throw .notARegularFile(path: path, found: describeKind(S_IFDIR))
    }

    private static func describeKind(_ kind: mode_t) -> String {
        switch kind {
        case S_IFDIR: "a directory"
        case S_IFIFO: "a FIFO"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        case S_IFSOCK: "a socket"
        case S_IFLNK: "a symbolic link"
        default: "not a regular file"
        }
    }

    /// Runs `body` holding an exclusive advisory lock on `lockPath` (created owner-only when
    /// missing).
    ///
    /// NB: the lock lives in its own file because the data file is replaced by `rename`, and a
    /// lock on a file that has been renamed over no longer excludes anyone.
    static func withLock<R>(_ lockPath: String, _ body: () throws(StoreError) -> R) throws(StoreError) -> R {
        guard let fd = try openRegularFile(lockPath, O_RDWR | O_CREAT, reading: false)?.fd else {
            throw .unwritable(path: lockPath, reason: "cannot create the lock file")
        }
        defer { close(fd) }
        while flock(fd, LOCK_EX) != 0 {
            guard errno == EINTR else {
                throw .unwritable(path: lockPath, reason: "cannot lock (\(lastError()))")
            }
        }
        defer { flock(fd, LOCK_UN) }
        return try body()
    }

    /// Opens `path` (created owner-only when missing) and waits for an exclusive advisory lock
    /// on it. Returns the open descriptor, to hand to ``unlockFile(_:)``, or `nil` when the file
    /// can't be opened or locked (a read-only directory, a planted non-regular file).
    static func lockFile(_ path: String) -> Int32? {
        guard let fd = try? openRegularFile(path, O_RDWR | O_CREAT, reading: false)?.fd else {
            return nil
        }
        while flock(fd, LOCK_EX) != 0 {
            guard errno == EINTR else {
                close(fd)
                return nil
            }
        }
        return fd
    }

    /// Releases a lock taken by ``lockFile(_:)``.
    static func unlockFile(_ fd: Int32) {
        flock(fd, LOCK_UN)
        close(fd)
    }

    /// The file's contents, or `nil` when it does not exist.
    /// - Throws: ``StoreError/tooLarge(path:size:limit:)`` past `limit` bytes,
    ///   ``StoreError/notARegularFile(path:found:)``, ``StoreError/unreadable(path:reason:)``.
    static func read(_ path: String, limit: Int) throws(StoreError) -> Data? {
        guard let (fd, expected) = try openRegularFile(path, O_RDONLY, reading: true) else { return nil }
        defer { close(fd) }
        guard expected <= limit else { throw .tooLarge(path: path, size: expected, limit: limit) }
        var data = Data(count: max(expected, 4096))
        var filled = 0
        while true {
            if filled == data.count {
                // The file grew since `fstat`: read on, but never past the limit.
                guard filled <= limit else { throw .tooLarge(path: path, size: filled, limit: limit) }
                data.count *= 2
            }
            let count = data.withUnsafeMutableBytes { buffer in
                systemRead(fd, buffer.baseAddress! + filled, buffer.count - filled)
            }
            if count == 0 {
                guard filled <= limit else { throw .tooLarge(path: path, size: filled, limit: limit) }
                data.count = filled
                return data
            }
            if count < 0 {
                if errno == EINTR { continue }
                throw .unreadable(path: path, reason: lastError())
            }
            filled += count
        }
    }

    // MARK: Writing

    /// The prefix of every temporary file written for `path`; the writer's process id and a
    /// random number follow it.
    private static func temporaryPrefix(for path: String) -> (directory: String, prefix: String) {
        let url = URL(fileURLWithPath: path)
        return (url.deletingLastPathComponent().path, ".\(url.lastPathComponent).tmp-")
    }

    /// Replaces `path` with `data` so that a crash at any instant leaves either the old file
    /// or the new one, complete: a temporary file in the same directory, written and fsynced,
    /// renamed over the old one, and the directory fsynced. Temporary files left by writers
    /// that died are removed first.
    ///
    /// Call it with this process's writers of `path` excluded (the stores' locks do that).
    static func writeAtomically(_ data: Data, to path: String) throws(StoreError) {
        let (directory, prefix) = temporaryPrefix(for: path)
        removeStaleTemporaries(for: path)
        let temporary = "\(directory)/\(prefix)\(getpid())-\(UInt32.random(in: .min ... .max))"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw .unwritable(path: path, reason: lastError())
        }
        var failure: String?
        data.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let written = systemWrite(fd, raw.baseAddress! + offset, raw.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    failure = lastError()
                    return
                }
                offset += written
            }
        }
        if failure == nil, !flushToDisk(fd) { failure = lastError() }
        close(fd)
        if failure == nil, rename(temporary, path) != 0 { failure = lastError() }
        if let failure {
            unlink(temporary)
            throw .unwritable(path: path, reason: failure)
        }
        syncDirectory(directory)
    }

    /// Removes `path` if it exists, and any temporary file a dead writer left for it, and makes
    /// the removal durable.
    ///
    /// Call it with this process's writers of `path` excluded (the stores' locks do that).
    static func remove(_ path: String) throws(StoreError) {
        let removedStale = removeStaleTemporaries(for: path)
        if unlink(path) != 0 {
            guard errno == ENOENT else { throw .unwritable(path: path, reason: lastError()) }
            if removedStale { syncDirectory(temporaryPrefix(for: path).directory) }
            return
        }
        syncDirectory(temporaryPrefix(for: path).directory)
    }

    /// Removes the temporary files of `path` whose writer can't be writing any more: those of
    /// processes that no longer exist, and this process's own (its writers of `path` are
    /// excluded by the caller). Returns whether it removed any.
    ///
    /// NB: a writer killed between creating its temporary file and renaming it leaves the file
    /// behind, and for a secret that file holds the token.
    @discardableResult
    static func removeStaleTemporaries(for path: String) -> Bool {
        let (directory, prefix) = temporaryPrefix(for: path)
        return removeStaleTemporaries(in: directory) { $0.hasPrefix(prefix) }
    }

    /// Removes the stale temporary files of every file in `directory` (see
    /// ``removeStaleTemporaries(for:)``). Call it with every writer in the directory excluded.
    @discardableResult
    static func removeStaleTemporaries(in directory: String, where matches: (String) -> Bool = { _ in true }) -> Bool {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return false }
        let me = getpid()
        var removed = false
        for name in names where name.hasPrefix(".") && matches(name) {
            guard let marker = name.range(of: ".tmp-", options: .backwards) else { continue }
            let rest = name[marker.upperBound...]
            guard let pid = rest.split(separator: "-").first.flatMap({ pid_t($0) }) else { continue }
            let writerIsGone = pid == me || (kill(pid, 0) != 0 && errno == ESRCH)
            if writerIsGone, unlink("\(directory)/\(name)") == 0 { removed = true }
        }
        return removed
    }

    /// Whether `directory` holds any temporary file of a writer (live or dead).
    static func hasTemporaries(in directory: String) -> Bool {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.contains { $0.hasPrefix(".") && $0.contains(".tmp-") }
    }

    /// Moves a bad file aside to `path.corrupt-<timestamp>` and returns the new path.
    static func moveAside(_ path: String) throws(StoreError) -> String {
        let stamp = Int(Date().timeIntervalSince1970 * 1000)
        var destination = "\(path).corrupt-\(stamp)"
        var attempt = 1
        while FileManager.default.fileExists(atPath: destination) {
            attempt += 1
            destination = "\(path).corrupt-\(stamp)-\(attempt)"
        }
        guard rename(path, destination) == 0 else {
            throw .unwritable(path: path, reason: "cannot move the corrupted file aside (\(lastError()))")
        }
        syncDirectory(URL(fileURLWithPath: path).deletingLastPathComponent().path)
        return destination
    }

    private static func syncDirectory(_ directory: String) {
        let fd = open(directory, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        _ = flushToDisk(fd)
        close(fd)
    }

    /// Makes what was written to `fd` durable; returns whether it could.
    ///
    /// NB: on Apple platforms `fsync` only hands the data to the drive, which may reorder or
    /// lose it on power loss; `F_FULLFSYNC` asks the drive to write it to its medium. Some file
    /// systems (network volumes) don't support it: then `fsync` is what there is.
    private static func flushToDisk(_ fd: Int32) -> Bool {
        #if canImport(Darwin)
        if fcntl(fd, F_FULLFSYNC) == 0 { return true }
        #endif
        return fsync(fd) == 0
    }
}

#if canImport(Darwin)
private let systemRead = Darwin.read
private let systemWrite = Darwin.write
#elseif canImport(Glibc)
private let systemRead = Glibc.read
private let systemWrite = Glibc.write
#elseif canImport(Musl)
private let systemRead = Musl.read
private let systemWrite = Musl.write
#endif
