public import _HabitatShims

/// A heap-allocated 64-bit counter updated with atomic instructions.
///
/// NB: the address must not move while other threads use it, so it lives in its own
/// allocation rather than in a Swift stored property.
@usableFromInline
// Safe: the storage is only read and written through the atomic builtins in
// `_HabitatShims`, and the pointer itself never changes.
final class AtomicCounter: @unchecked Sendable {
    @usableFromInline let storage: UnsafeMutablePointer<UInt64>

    @usableFromInline
    init(_ value: UInt64 = 0) {
        storage = .allocate(capacity: 1)
        storage.initialize(to: value)
    }

    deinit { storage.deallocate() }

    @inlinable
    func load() -> UInt64 { habitat_atomic_load_acquire_u64(storage) }

    @inlinable
    func store(_ value: UInt64) { habitat_atomic_store_release_u64(storage, value) }

    /// Adds `delta` and returns the new value.
    @inlinable @discardableResult
    func add(_ delta: UInt64) -> UInt64 { habitat_atomic_fetch_add_u64(storage, delta) &+ delta }

    /// Subtracts `delta` and returns the new value.
    @inlinable @discardableResult
    func subtract(_ delta: UInt64) -> UInt64 { habitat_atomic_fetch_add_u64(storage, 0 &- delta) &- delta }
}

/// Where threads take their blocks of stamps (see ``ReaderSlot/takeStamp()``): the last stamp
/// handed out to any thread so far.
///
/// A stamp identifies one filled frame. A reader that cached the frame for stamp `s` knows its
/// cache is still current exactly when the state's stamp still reads `s`.
@usableFromInline
let stampSource = AtomicCounter(0)

/// How many stamps a thread takes from `stampSource` at a time.
@usableFromInline
let stampBlock: UInt64 = 1024

/// A stamp unique in the process, from the calling thread's block.
@inlinable
func nextStamp() -> UInt64 { currentReaderSlot().pointee.takeStamp() }
