#if canImport(Darwin)
public import Darwin
#elseif canImport(Glibc)
public import Glibc
#elseif canImport(Musl)
public import Musl
#endif

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
