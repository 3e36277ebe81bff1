#if canImport(Darwin)
public import Darwin
#elseif canImport(Glibc)
public import Glibc
#elseif canImport(Musl)
public import Musl
#endif

/// A mutual-exclusion lock the thread sanitizer understands.
///
/// NB: `Synchronization.Mutex` would be the natural choice, but it needs macOS 15 / iOS 18 and
/// the thread sanitizer cannot see its futex, so it reports false races. A heap-allocated
/// `pthread_mutex_t` (or `os_unfair_lock` on Apple platforms) is stable in memory, fast when
/// uncontended, and visible to TSan.
@usableFromInline
final class Lock: @unchecked Sendable {
    // Safe: the lock word lives at a fixed heap address for the object's lifetime and is only
    // touched through the platform's lock functions, which are themselves thread-safe.
    #if canImport(Darwin)
    @usableFromInline let word: UnsafeMutablePointer<os_unfair_lock>
    #else
    @usableFromInline let word: UnsafeMutablePointer<pthread_mutex_t>
    #endif

    @usableFromInline
    init() {
        #if canImport(Darwin)
        word = .allocate(capacity: 1)
        word.initialize(to: os_unfair_lock())
        #else
        word = .allocate(capacity: 1)
        word.initialize(to: pthread_mutex_t())
        let status = pthread_mutex_init(word, nil)
        precondition(status == 0, "pthread_mutex_init failed with \(status)")
        #endif
    }

    deinit {
        #if !canImport(Darwin)
        pthread_mutex_destroy(word)
        #endif
        word.deinitialize(count: 1)
        word.deallocate()
    }

    @inlinable
    func lock() {
        #if canImport(Darwin)
        os_unfair_lock_lock(word)
        #else
        pthread_mutex_lock(word)
        #endif
    }

    @inlinable
    func unlock() {
        #if canImport(Darwin)
        os_unfair_lock_unlock(word)
        #else
        pthread_mutex_unlock(word)
        #endif
    }

    /// Runs `body` with the lock held.
    @inlinable
    func withLock<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        lock()
        defer { unlock() }
        return try body()
    }
}
