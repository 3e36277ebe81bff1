public import _HabitatShims

/// A 64-bit word updated with atomic instructions, in an allocation of its own so its address
/// never moves.
///
/// Shaped like `Synchronization.Atomic<UInt64>` (same initialiser, method names and ordering
/// labels), so that once Habitat requires macOS 15 / iOS 18 switching is a change of type.
/// Until then the operations are the compiler's builtins, which the thread sanitizer sees.
@usableFromInline
// Safe: the word is only read and written through the atomic builtins, at a fixed address.
package final class AtomicWord: @unchecked Sendable {
    @usableFromInline let word: UnsafeMutablePointer<UInt64>

    @inlinable
    package init(_ value: UInt64) {
        word = .allocate(capacity: 1)
        word.initialize(to: value)
    }

    @inlinable
    deinit { word.deallocate() }

    @inlinable
    package func load(ordering: AtomicLoadOrdering) -> UInt64 { habitat_atomic_load_acquire_u64(word) }

    @inlinable
    package func store(_ value: UInt64, ordering: AtomicStoreOrdering) { habitat_atomic_store_release_u64(word, value) }

    @inlinable @discardableResult
    package func wrappingAdd(_ delta: UInt64, ordering: AtomicUpdateOrdering) -> (oldValue: UInt64, newValue: UInt64) {
        let old = habitat_atomic_fetch_add_u64(word, delta)
        return (old, old &+ delta)
    }

    @inlinable @discardableResult
    package func wrappingSubtract(_ delta: UInt64, ordering: AtomicUpdateOrdering) -> (oldValue: UInt64, newValue: UInt64) {
        wrappingAdd(0 &- delta, ordering: ordering)
    }
}

/// The orderings Habitat uses, named as in `Synchronization`.
@usableFromInline package enum AtomicLoadOrdering { case acquiring }
@usableFromInline package enum AtomicStoreOrdering { case releasing }
@usableFromInline package enum AtomicUpdateOrdering { case acquiringAndReleasing }

/// Holds at most one object, handed between threads without a lock: ``take()`` empties it with
/// one atomic exchange, ``offer(_:)`` fills it with one compare-and-swap.
@usableFromInline
// Safe: the word holds a retained object or nil and is only read and written with atomic
// exchanges, so each object it held goes to exactly one taker.
final class AtomicBox<Object: AnyObject>: @unchecked Sendable {
    @usableFromInline let word: UnsafeMutablePointer<UnsafeMutableRawPointer?>

    @inlinable
    init() {
        word = .allocate(capacity: 1)
        word.initialize(to: nil)
    }

    @inlinable
    deinit {
        _ = take()
        word.deallocate()
    }

    /// The object held, if any, leaving the box empty.
    @inlinable
    func take() -> Object? {
        guard let object = habitat_atomic_exchange_ptr(word, nil) else { return nil }
        return Unmanaged<Object>.fromOpaque(object).takeRetainedValue()
    }

    /// Keeps `object` if the box is empty; otherwise lets go of it.
    @inlinable
    func offer(_ object: consuming Object) {
        let address = Unmanaged.passRetained(object).toOpaque()
        if !habitat_atomic_cas_ptr(word, nil, address) { Unmanaged<Object>.fromOpaque(address).release() }
    }
}
