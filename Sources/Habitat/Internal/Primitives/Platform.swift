// The platform's locks and thread-locals: the one file of the core that imports the platform.
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

/// A value and the mutex that guards it, in one allocation.
///
/// NB: `Synchronization.Mutex` would be the natural choice, but it needs macOS 15 / iOS 18 and
/// the thread sanitizer cannot see its futex, so it reports false races. `pthread_mutex_t` (or
/// `os_unfair_lock` on Apple platforms) is fast when uncontended and visible to TSan; it must
/// not move while in use, so it lives in this object's tail. Every return code is checked, and
/// debug builds use an error-checking mutex, so relocking from the owner or unlocking from
/// another thread traps instead of hanging.
@usableFromInline
final class Locked<Value>: ManagedBuffer<Value, PlatformMutex> {
    @inlinable
    static func make(_ value: Value) -> Locked<Value> {
        let locked = unsafeDowncast(create(minimumCapacity: 1) { _ in value }, to: Locked<Value>.self)
        locked.withUnsafeMutablePointerToElements { mutex in
            #if canImport(Darwin)
            mutex.initialize(to: os_unfair_lock())
            #else
            mutex.initialize(to: pthread_mutex_t())
            var attributes = pthread_mutexattr_t()
            pthread_mutexattr_init(&attributes)
            #if DEBUG
            pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_ERRORCHECK))
            #endif
            let status = pthread_mutex_init(mutex, &attributes)
            pthread_mutexattr_destroy(&attributes)
            precondition(status == 0, "pthread_mutex_init failed with \(status)")
            #endif
        }
        return locked
    }

    @inlinable
    deinit {
        // The value, this buffer's header, is destroyed by `ManagedBuffer` itself.
        withUnsafeMutablePointerToElements { mutex in
            #if !canImport(Darwin)
            let status = pthread_mutex_destroy(mutex)
            precondition(status == 0, "pthread_mutex_destroy failed with \(status): the mutex is still locked")
            #endif
            // NB: `_ =` keeps the closure's result `Void` on Darwin too, where the `#if` leaves
            // this as its only expression (and the call's pointer result would be unused).
            _ = mutex.deinitialize(count: 1)
        }
    }

    /// Runs `body` with the lock held, on the value in place.
    @inlinable
    func withLock<R, E: Error>(_ body: (inout Value) throws(E) -> R) throws(E) -> R {
        let value = withUnsafeMutablePointerToHeader { $0 }
        return try withLockHeld { () throws(E) in try body(&value.pointee) }
    }

    /// Runs `body` with the lock held, without touching the value.
    ///
    /// NB: ``Lock`` uses this: an `inout` access to a zero-sized value (`Locked<Void>`) is one the
    /// thread sanitizer places at the object's own address, where it reports a race with any
    /// thread reading the object's header.
    @inlinable
    func withLockHeld<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        let mutex = withUnsafeMutablePointerToElements { $0 }
        #if canImport(Darwin)
        os_unfair_lock_lock(mutex)
        defer { os_unfair_lock_unlock(mutex) }
        #else
        let status = pthread_mutex_lock(mutex)
        precondition(status == 0, "pthread_mutex_lock failed with \(status)")
        defer {
            let status = pthread_mutex_unlock(mutex)
            precondition(status == 0, "pthread_mutex_unlock failed with \(status)")
        }
        #endif
        return try body()
    }
}

/// A value behind a lock: the package's one lock-guarded box, for the stack's machinery, the
/// stores, the Keychain store and HabitatTesting. `withLock` is the only way to the value; a box
/// of `()` is a plain lock, for work that must not interleave.
@usableFromInline
package final class LockedBox<Value> {
    @usableFromInline let locked: Locked<Value>

    @usableFromInline package init(_ value: Value) { locked = Locked.make(value) }

    /// Runs `body` with the lock held, on the value in place.
    @inlinable package func withLock<R, E: Error>(_ body: (inout Value) throws(E) -> R) throws(E) -> R { try locked.withLock(body) }
}

// Safe: the value is reached only through `withLock`, with the lock held (`Locked` itself can't
// say `Sendable`, being a `ManagedBuffer`).
extension LockedBox: @unchecked Sendable where Value: Sendable {}

extension LockedBox where Value == Void {
    /// Runs `body` with the lock held.
    @inlinable package func withLock<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R { try locked.withLockHeld(body) }
}

/// A pointer per thread, `nil` until the thread sets it; `destroy` runs on a thread's pointer
/// when that thread exits.
@usableFromInline
struct ThreadLocal: Sendable {
    @usableFromInline let key: pthread_key_t

    #if canImport(Darwin)
    typealias Destructor = @convention(c) (UnsafeMutableRawPointer) -> Void
    #else
    typealias Destructor = @convention(c) (UnsafeMutableRawPointer?) -> Void
    #endif

    /// - Parameter destroy: A closure that captures nothing (a C function).
    init(destroy: Destructor) {
        var key = pthread_key_t()
        let status = pthread_key_create(&key, destroy)
        precondition(status == 0, "pthread_key_create failed with \(status)")
        self.key = key
    }

    @inlinable
    var value: UnsafeMutableRawPointer? { pthread_getspecific(key) }

    @usableFromInline
    func set(_ value: UnsafeMutableRawPointer) {
        let status = pthread_setspecific(key, value)
        precondition(status == 0, "pthread_setspecific failed with \(status)")
    }
}
