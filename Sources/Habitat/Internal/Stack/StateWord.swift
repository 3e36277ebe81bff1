#if canImport(Darwin)
public import Darwin
#elseif canImport(Glibc)
public import Glibc
#elseif canImport(Musl)
public import Musl
#endif

/// The tail of a ``StackState``'s allocation: the published stamp, then the writers' mutex.
@usableFromInline
struct StateWord {
    @usableFromInline var stamp: UInt64
    @usableFromInline var mutex = PlatformMutex()

    @inlinable
    init(stamp: UInt64) { self.stamp = stamp }

    @inlinable
    static func stamp(in word: UnsafeMutablePointer<StateWord>) -> UnsafeMutablePointer<UInt64> {
        UnsafeMutableRawPointer(word).assumingMemoryBound(to: UInt64.self)
    }

    @inlinable
    static func mutex(in word: UnsafeMutablePointer<StateWord>) -> UnsafeMutablePointer<PlatformMutex> {
        (UnsafeMutableRawPointer(word) + MemoryLayout<UInt64>.stride).assumingMemoryBound(to: PlatformMutex.self)
    }
}

/// A weak reference to a state, for a stream's termination handler.
@usableFromInline
// Safe: `state` is set once in `init` and only read afterwards (the weak reference itself is
// thread-safe), and what is done with it, removing a subscriber, takes the state's lock.
final class WeakState: @unchecked Sendable {
    @usableFromInline weak var state: AnyObject?

    @inlinable
    init(_ state: AnyObject) { self.state = state }
}
