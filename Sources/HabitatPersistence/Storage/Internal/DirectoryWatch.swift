import Habitat
// A file's changes, from the kernel: inotify on Linux, a directory vnode source on Apple
// platforms. Both watch the directory, not the file, so a watch survives the atomic replacement
// every store write is (a new file renamed over the old one), and the file's deletion and
// re-creation. The one place in the stores that reads kernel event records.

import Dispatch
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Calls `onChange` on a utility queue when the file `name` in `directory` may have changed,
/// until `cancel()`; an idle watch wakes nobody.
// Safe: the source is reached only through its box, with the lock held (a dispatch source
// doesn't say `Sendable` everywhere, so neither can the box).
final class DirectoryWatch: @unchecked Sendable {
    private let source: LockedBox<(any DispatchSourceProtocol)?>

    private init(_ source: any DispatchSourceProtocol) {
        self.source = LockedBox(source)
    }

    /// Stops the watch. Safe to call more than once.
    func cancel() {
        source.withLock { source in
            source?.cancel()
            source = nil
        }
    }

    deinit { cancel() }

    /// Directories whose watches fail as if the kernel refused them (for tests of the fallback).
    package static let refused = LockedBox<Set<String>>([])

    /// Starts watching `name` in `directory`; `nil` (with `errno`'s reason) when the kernel
    /// refuses: the watch limit reached (Linux `ENOSPC`), too many open files.
    static func start(
        _ name: String,
        in directory: TrustedDirectory,
        onChange: @escaping @Sendable () -> Void
    ) -> Result<DirectoryWatch, WatchRefused> {
        if refused.withLock({ $0.contains(directory.path) }) { return .failure(WatchRefused(reason: "refused for a test")) }
        #if canImport(Darwin)
        let fd = openat(directory.descriptor, ".", O_EVTONLY | O_CLOEXEC)
        guard fd >= 0 else { return .failure(WatchRefused(reason: FileSystem.lastError())) }
        let source = DispatchSource.makeFileSystemObjectSource(fileDescriptor: fd, eventMask: [.write, .delete, .rename], queue: .global(qos: .utility))
        source.setEventHandler(handler: onChange)
        source.setCancelHandler { close(fd) }
        source.resume()
        return .success(DirectoryWatch(source))
        #elseif os(Linux)
        let fd = inotify_init1(Int32(IN_NONBLOCK) | Int32(IN_CLOEXEC))
        guard fd >= 0 else { return .failure(WatchRefused(reason: FileSystem.lastError())) }
        let events = UInt32(IN_CLOSE_WRITE) | UInt32(IN_MOVED_TO) | UInt32(IN_MOVED_FROM) | UInt32(IN_CREATE)
            | UInt32(IN_DELETE) | UInt32(IN_DELETE_SELF) | UInt32(IN_MOVE_SELF)
        // NB: the directory the store opened, by its descriptor: not whatever its path names now.
        guard inotify_add_watch(fd, "/proc/self/fd/\(directory.descriptor)", events) >= 0 else {
            let reason = FileSystem.lastError()
            close(fd)
            return .failure(WatchRefused(reason: reason))
        }
        let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: .global(qos: .utility))
        source.setEventHandler {
            if Self.drain(fd, concerns: name) { onChange() }
        }
        source.setCancelHandler { close(fd) }
        source.resume()
        return .success(DirectoryWatch(source))
        #else
        return .failure(WatchRefused(reason: "no file watch on this platform"))
        #endif
    }

    #if os(Linux)
    /// Reads every pending event from `fd`; returns whether one concerns the file `name` (or
    /// the directory itself, or events were lost).
    private static func drain(_ fd: Int32, concerns name: String) -> Bool {
        var concerns = false
        var buffer = [UInt8](repeating: 0, count: 4_096)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard count > 0 else { return concerns }
            buffer.withUnsafeBytes { bytes in
                var offset = 0
                // struct inotify_event { int wd; uint32_t mask, cookie, len; char name[len]; }
                while offset + 16 <= count {
                    let mask = bytes.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self)
                    let length = Int(bytes.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))
                    let nameBytes = bytes[(offset + 16)..<min(offset + 16 + length, count)].prefix { $0 != 0 }
                    let selfOrLost = mask & (UInt32(IN_DELETE_SELF) | UInt32(IN_MOVE_SELF) | UInt32(IN_Q_OVERFLOW)) != 0
                    if selfOrLost || String(decoding: nameBytes, as: UTF8.self) == name { concerns = true }
                    offset += 16 + length
                }
            }
        }
    }
    #endif
}

/// Why the kernel refused a watch.
struct WatchRefused: Error {
    let reason: String
}
