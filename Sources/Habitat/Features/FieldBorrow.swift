/// A feature's services borrowed for one read: in place in the stack's current frame, or, for a
/// computed property, in a copy of their own.
///
/// NB: the one unsafe part of slices. ``offset(of:)`` only answers for a stored property (the
/// standard library returns `nil` for anything computed), so the address it leads to holds an
/// initialised value of the field's type; the frame stays alive while the calling thread's
/// reader slot counts the borrow, exactly as for ``EnvironmentStack/current``, until ``end()``.
@usableFromInline
struct FieldBorrow {
    /// Where the services are, valid until ``end()``.
    @usableFromInline let address: UnsafeRawPointer
    /// The reader slot that keeps the frame alive, for a read in place.
    @usableFromInline let slot: UnsafeMutablePointer<ReaderSlot>?
    /// The copy the address points into, for a computed property, retained until ``end()``.
    /// Unmanaged, so a borrow in place is a plain value with nothing to release.
    @usableFromInline let copy: UnsafeMutableRawPointer?

    /// The byte offset of the services at `path` in an environment of `App`, if `path` is stored.
    @usableFromInline
    static func offset<App: EnvironmentSchema, Field>(of path: WritableKeyPath<App.Services, Field>, in _: App.Type) -> Int? {
        guard let services = MemoryLayout<HabitatEnvironment<App>>.offset(of: \HabitatEnvironment<App>.services),
              let field = MemoryLayout<App.Services>.offset(of: path)
        else { return nil }
        return services + field
    }

    /// Borrows the field at `offset` of the calling task's current environment of `stack`.
    @inlinable
    init<App: EnvironmentSchema>(in stack: EnvironmentStack<App>, at offset: Int) {
        let (frame, slot) = stack.beginRead()
        address = frame._withUnsafeGuaranteedRef { UnsafeRawPointer($0.environmentAddress) + offset }
        self.slot = slot
        copy = nil
    }

    /// Holds `value` in a box of its own and borrows it there.
    @inlinable
    init<Field>(copying value: Field) {
        let box = FieldCopy(value)
        address = UnsafeRawPointer(box.address)
        slot = nil
        copy = Unmanaged.passRetained(box).toOpaque()
    }

    /// Ends the borrow: the frame may go once nothing else reads it.
    @inlinable
    func end() {
        if let slot {
            slot.pointee.endBorrow()
        } else if let copy {
            Unmanaged<AnyObject>.fromOpaque(copy).release()
        }
    }
}

/// A computed field's value, at an address that lives as long as the box.
@usableFromInline
final class FieldCopy<Field> {
    @usableFromInline let address: UnsafeMutablePointer<Field>

    @inlinable
    init(_ value: Field) {
        address = .allocate(capacity: 1)
        address.initialize(to: value)
    }

    @inlinable
    deinit {
        address.deinitialize(count: 1)
        address.deallocate()
    }
}
