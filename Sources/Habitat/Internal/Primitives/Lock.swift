#if canImport(Darwin)
public import Darwin
#elseif canImport(Glibc)
public import Glibc
#elseif canImport(Musl)
public import Musl
#endif

#if canImport(Darwin)
@usableFromInline typealias PlatformMutex = os_unfair_lock
#else
@usableFromInline typealias PlatformMutex = pthread_mutex_t
#endif

/// A mutex the thread sanitizer understands, at an address of the caller's choosing.
///
/// NB: `Synchronization.Mutex` would be the natural choice, but it needs macOS 15 / iOS 18 and
/// the thread sanitizer cannot see its futex, so it reports false races. `pthread_mutex_t` (or
/// `os_unfair_lock` on Apple platforms) is fast when uncontended and visible to TSan. It must
/// not move while in use, so it lives in heap memory: a ``Lock`` object, or the tail of a
/// stack state's own allocation.
@usableFromInline
enum Mutex {
    @inlinable
    static func initialize(_ mutex: UnsafeMutablePointer<PlatformMutex>) {
        #if canImport(Darwin)
        mutex.initialize(to: os_unfair_lock())
        #else
        mutex.initialize(to: pthread_mutex_t())
        #if DEBUG
        // Debug builds check every use: relocking from the owning thread, or unlocking a mutex
        // this thread doesn't hold, returns an error (and traps below) instead of hanging or
        // corrupting the lock.
        var attributes = pthread_mutexattr_t()
        pthread_mutexattr_init(&attributes)
        pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_ERRORCHECK))
        let status = pthread_mutex_init(mutex, &attributes)
        pthread_mutexattr_destroy(&attributes)
        #else
        let status = pthread_mutex_init(mutex, nil)
        #endif
        precondition(status == 0, "pthread_mutex_init failed with \(status)")
        #endif
    }

    @inlinable
    static func destroy(_ mutex: UnsafeMutablePointer<PlatformMutex>) {
        #if !canImport(Darwin)
        let status = pthread_mutex_destroy(mutex)
        precondition(status == 0, "pthread_mutex_destroy failed with \(status): the mutex is still locked")
        #endif
        mutex.deinitialize(count: 1)
    }

    @inlinable
    static func lock(_ mutex: UnsafeMutablePointer<PlatformMutex>) {
        #if canImport(Darwin)
        os_unfair_lock_lock(mutex)
        #else
        let status = pthread_mutex_lock(mutex)
        precondition(status == 0, "pthread_mutex_lock failed with \(status)")
        #endif
    }

    @inlinable
    static func unlock(_ mutex: UnsafeMutablePointer<PlatformMutex>) {
        #if canImport(Darwin)
        os_unfair_lock_unlock(mutex)
        #else
        let status = pthread_mutex_unlock(mutex)
        precondition(status == 0, "pthread_mutex_unlock failed with \(status)")
        #endif
    }
}

/// A lock object, for the classes that need one of their own.
@usableFromInline
// Safe: the mutex lives at a fixed heap address for the object's lifetime and is only
// touched through the platform's lock functions, which are themselves thread-safe.
final class Lock: @unchecked Sendable {
    @usableFromInline let mutex: UnsafeMutablePointer<PlatformMutex>

    @usableFromInline
    init() {
        mutex = .allocate(capacity: 1)
        Mutex.initialize(mutex)
    }

    deinit {
        Mutex.destroy(mutex)
        mutex.deallocate()
    }

    @inlinable
    func lock() { Mutex.lock(mutex) }

    @inlinable
    func unlock() { Mutex.unlock(mutex) }

    /// Runs `body` with the lock held.
    @inlinable
    func withLock<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        lock()
        defer { unlock() }
        return try body()
    }
}
