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
enum FileSystem {
    /// The message for the current `errno`.
    static func lastError() -> String {
        String(cString: strerror(errno))
    }

    /// Makes sure `directory` exists, creating it (and its parents) owner-only when allowed.
    static func ensureDirectory(_ directory: URL, create: Bool) throws(StoreError) {
        let path = directory.path
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else {
                throw .unwritable(path: path, reason: "it exists and is not a directory")
            }
            return
        }
        guard create else { throw .missingDirectory(path: path) }
        do {
            try FileManager.default.createDirectory(
                at: directory,
                withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700]
            )
        } catch {
            throw .unwritable(path: path, reason: "cannot create the directory (\(describeFileError(error)))")
        }
    }

    /// Runs `body` holding an exclusive advisory lock on `lockPath` (created owner-only when
    /// missing).
    ///
    /// NB: the lock lives in its own file because the data file is replaced by `rename`, and a
    /// lock on a file that has been renamed over no longer excludes anyone.
    static func withLock<R>(_ lockPath: String, _ body: () throws(StoreError) -> R) throws(StoreError) -> R {
        let fd = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw .unwritable(path: lockPath, reason: "cannot open the lock file (\(lastError()))")
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

    /// The file's contents, or `nil` when it does not exist.
    static func read(_ path: String) throws(StoreError) -> Data? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT { return nil }
            throw .unreadable(path: path, reason: lastError())
        }
        defer { close(fd) }
        var status = stat()
        let expected = fstat(fd, &status) == 0 ? Int(status.st_size) : 0
        var data = Data(count: max(expected, 4096))
        var filled = 0
        while true {
            if filled == data.count { data.count *= 2 }
            let count = data.withUnsafeMutableBytes { buffer in
                Glibc_read(fd, buffer.baseAddress! + filled, buffer.count - filled)
            }
            if count == 0 {
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

    /// Replaces `path` with `data` so that a crash at any instant leaves either the old file
    /// or the new one, complete: a temporary file in the same directory, written and fsynced,
    /// renamed over the old one, and the directory fsynced.
    static func writeAtomically(_ data: Data, to path: String) throws(StoreError) {
        let url = URL(fileURLWithPath: path)
        let directory = url.deletingLastPathComponent().path
        let temporary = "\(directory)/.\(url.lastPathComponent).tmp-\(getpid())-\(UInt32.random(in: .min ... .max))"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw .unwritable(path: path, reason: lastError())
        }
        var failure: String?
        data.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let written = Glibc_write(fd, raw.baseAddress! + offset, raw.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    failure = lastError()
                    return
                }
                offset += written
            }
        }
        if failure == nil, fsync(fd) != 0 { failure = lastError() }
        close(fd)
        if failure == nil, rename(temporary, path) != 0 { failure = lastError() }
        if let failure {
            unlink(temporary)
            throw .unwritable(path: path, reason: failure)
        }
        syncDirectory(directory)
    }

    /// Removes `path` if it exists, and makes the removal durable.
    static func remove(_ path: String) throws(StoreError) {
        if unlink(path) != 0 {
            guard errno == ENOENT else { throw .unwritable(path: path, reason: lastError()) }
            return
        }
        syncDirectory(URL(fileURLWithPath: path).deletingLastPathComponent().path)
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
        fsync(fd)
        close(fd)
    }

    private static func describeFileError(_ error: any Error) -> String {
        let nsError = error as NSError
        if let underlying = nsError.userInfo[NSUnderlyingErrorKey] as? NSError,
           underlying.domain == NSPOSIXErrorDomain {
            return String(cString: strerror(Int32(underlying.code)))
        }
        return nsError.localizedDescription
    }
}

#if canImport(Darwin)
private let Glibc_read = Darwin.read
private let Glibc_write = Darwin.write
#elseif canImport(Glibc)
private let Glibc_read = Glibc.read
private let Glibc_write = Glibc.write
#elseif canImport(Musl)
private let Glibc_read = Musl.read
private let Glibc_write = Musl.write
#endif
