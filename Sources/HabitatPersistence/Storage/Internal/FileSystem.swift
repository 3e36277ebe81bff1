import Habitat
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
/// Nothing here trusts what it finds on disk: every file is reached through a
/// `TrustedDirectory` (opened once and checked, `StrictModes`-style, with its ancestors), is
/// opened without following symbolic links, and must be a regular file within a size limit (a
/// FIFO would block an `open` forever, a device would feed a read without end).
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

    // MARK: Opening files

    /// Opens `name` in `directory` with `flags`, never through a symbolic link and never anything
    /// but a regular file. Returns the descriptor and the file's size then, or `nil` when the
    /// file does not exist (and `flags` don't create it).
    private static func openRegularFile(
        _ name: String,
        in directory: TrustedDirectory,
        _ flags: Int32,
        reading: Bool
    ) throws(StoreError) -> (fd: Int32, size: Int)? {
        let path = directory.path(of: name)
        // NB: O_NONBLOCK, so that a FIFO planted in the file's place can't block the open; it
        // changes nothing for a regular file.
        let fd = openat(directory.descriptor, name, flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0o600)
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

    /// Throws when a directory is at `path` (a store's URL naming its directory, not its file),
    /// to say so before anything else. Other kinds of file are refused when read or written,
    /// where a planted one is met.
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

    /// Runs `body` holding an exclusive advisory lock on the file `name` in `directory` (created
    /// owner-only when missing).
    ///
    /// NB: the lock lives in its own file because the data file is replaced by `rename`, and a
    /// lock on a file that has been renamed over no longer excludes anyone.
    static func withLock<R>(_ name: String, in directory: TrustedDirectory, _ body: () throws(StoreError) -> R) throws(StoreError) -> R {
        let path = directory.path(of: name)
        guard let fd = try openRegularFile(name, in: directory, O_RDWR | O_CREAT, reading: false)?.fd else {
            throw .unwritable(path: path, reason: "cannot create the lock file")
        }
        defer { close(fd) }
        while flock(fd, LOCK_EX) != 0 {
            guard errno == EINTR else {
                throw .unwritable(path: path, reason: "cannot lock (\(lastError()))")
            }
        }
        defer { flock(fd, LOCK_UN) }
        return try body()
    }

    /// Opens `name` in `directory` (created owner-only when missing) and waits for an exclusive
    /// advisory lock on it. Returns the open descriptor, to hand to `unlockFile(_:)`, or `nil`
    /// when the file can't be opened or locked (a read-only directory, a planted non-regular file).
    static func lockFile(_ name: String, in directory: TrustedDirectory) -> Int32? {
        guard let fd = try? openRegularFile(name, in: directory, O_RDWR | O_CREAT, reading: false)?.fd else {
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

    /// Releases a lock taken by `lockFile(_:in:)`.
    static func unlockFile(_ fd: Int32) {
        flock(fd, LOCK_UN)
        close(fd)
    }

    /// The contents of `name` in `directory`, or `nil` when it does not exist.
    /// - Throws: ``StoreError/tooLarge(path:size:limit:)`` past `limit` bytes,
    ///   ``StoreError/notARegularFile(path:found:)``, ``StoreError/unreadable(path:reason:)``.
    static func read(_ name: String, in directory: TrustedDirectory, limit: Int) throws(StoreError) -> Data? {
        let path = directory.path(of: name)
        guard let (fd, expected) = try openRegularFile(name, in: directory, O_RDONLY, reading: true) else { return nil }
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

    /// The prefix of every temporary file written for `name`; the writer's process id and a
    /// random number follow it.
    private static func temporaryPrefix(for name: String) -> String { ".\(name).tmp-" }

    /// Replaces `name` in `directory` with `data` so that a crash at any instant leaves either
    /// the old file or the new one, complete: a temporary file in the same directory, written
    /// and fsynced, renamed over the old one, and the directory fsynced. Temporary files left by
    /// writers that died are removed first.
    ///
    /// With `flushingDirectory` `false`, the directory isn't flushed: a crash (a power loss) may
    /// then bring back the old file, whole, until the directory's next flush.
    ///
    /// Call it holding the lock that excludes every writer of `name` (the stores' locks do).
    static func writeAtomically(_ data: Data, to name: String, in directory: TrustedDirectory, flushingDirectory: Bool = true) throws(StoreError) {
        let path = directory.path(of: name)
        removeStaleTemporaries(for: name, in: directory)
        let temporary = "\(temporaryPrefix(for: name))\(getpid())-\(UInt32.random(in: .min ... .max))"
        let fd = openat(directory.descriptor, temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
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
        if failure == nil, renameat(directory.descriptor, temporary, directory.descriptor, name) != 0 { failure = lastError() }
        if let failure {
            unlinkat(directory.descriptor, temporary, 0)
            throw .unwritable(path: path, reason: failure)
        }
        if flushingDirectory { _ = flushToDisk(directory.descriptor) }
    }

    /// Removes `name` from `directory` if it exists, and any temporary file a dead writer left
    /// for it, and makes the removal durable (unless `flushingDirectory` is `false`: a crash may
    /// then bring the file back until the directory's next flush).
    ///
    /// Call it holding the lock that excludes every writer of `name` (the stores' locks do).
    static func remove(_ name: String, in directory: TrustedDirectory, flushingDirectory: Bool = true) throws(StoreError) {
        let removedStale = removeStaleTemporaries(for: name, in: directory)
        if unlinkat(directory.descriptor, name, 0) != 0 {
            guard errno == ENOENT else { throw .unwritable(path: directory.path(of: name), reason: lastError()) }
            if removedStale, flushingDirectory { _ = flushToDisk(directory.descriptor) }
            return
        }
        if flushingDirectory { _ = flushToDisk(directory.descriptor) }
    }

    /// Removes the temporary files of `name`. Returns whether it removed any.
    ///
    /// Call it holding the lock that excludes every writer of `name`: then no temporary file
    /// can be a live writer's, whatever process id it names (a killed writer's, or one whose
    /// process id was reused), and for a secret such a file holds the token.
    @discardableResult
    static func removeStaleTemporaries(for name: String, in directory: TrustedDirectory) -> Bool {
        let prefix = temporaryPrefix(for: name)
        return removeStaleTemporaries(in: directory) { $0.hasPrefix(prefix) }
    }

    /// Removes the temporary files in `directory` that `matches` selects (every one by default).
    /// Call it holding the lock that excludes every writer of those files.
    @discardableResult
    static func removeStaleTemporaries(in directory: TrustedDirectory, where matches: (String) -> Bool = { _ in true }) -> Bool {
        var removed = false
        for name in names(in: directory) where name.hasPrefix(".") && name.contains(".tmp-") && matches(name) {
            if unlinkat(directory.descriptor, name, 0) == 0 { removed = true }
        }
        return removed
    }

    /// Whether `directory` holds any temporary file of a writer (live or dead).
    static func hasTemporaries(in directory: TrustedDirectory) -> Bool {
        names(in: directory).contains { $0.hasPrefix(".") && $0.contains(".tmp-") }
    }

    /// The names in `directory`, read through its descriptor.
    private static func names(in directory: TrustedDirectory) -> [String] {
        let fd = dup(directory.descriptor)
        guard fd >= 0, let stream = fdopendir(fd) else {
            if fd >= 0 { close(fd) }
            return []
        }
        defer { closedir(stream) }
        rewinddir(stream)
        var names: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { bytes in
                String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// How many set-aside copies of a file are kept: a damaged file may hold a token from an
    /// earlier version's format, so older copies are removed rather than kept forever.
    static let setAsideCopiesKept = 3

    /// Moves a bad file aside to `name.corrupt-<timestamp>` and returns the new path; keeps the
    /// newest `setAsideCopiesKept` such copies and removes older ones.
    static func moveAside(_ name: String, in directory: TrustedDirectory) throws(StoreError) -> String {
        let stamp = Int(Date().timeIntervalSince1970 * 1000)
        var destination = "\(name).corrupt-\(stamp)"
        var attempt = 1
        var status = stat()
        while fstatat(directory.descriptor, destination, &status, AT_SYMLINK_NOFOLLOW) == 0 {
            attempt += 1
            destination = "\(name).corrupt-\(stamp)-\(attempt)"
        }
        guard renameat(directory.descriptor, name, directory.descriptor, destination) == 0 else {
            throw .unwritable(path: directory.path(of: name), reason: "cannot move the corrupted file aside (\(lastError()))")
        }
        let copies = names(in: directory).filter { $0.hasPrefix("\(name).corrupt-") }.sorted(by: newestLast)
        for old in copies.dropLast(setAsideCopiesKept) { unlinkat(directory.descriptor, old, 0) }
        _ = flushToDisk(directory.descriptor)
        return directory.path(of: destination)
    }

    /// Orders set-aside copies by their timestamp, then by their attempt number.
    private static func newestLast(_ a: String, _ b: String) -> Bool {
        func key(_ name: String) -> [Int] {
            guard let marker = name.range(of: ".corrupt-", options: .backwards) else { return [] }
            return name[marker.upperBound...].split(separator: "-").compactMap { Int($0) }
        }
        return key(a).lexicographicallyPrecedes(key(b))
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
