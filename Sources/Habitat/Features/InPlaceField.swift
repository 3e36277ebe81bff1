/// Reads one stored field of a stack's current environment where it lies, without copying the
/// rest: what a feature slice's read costs instead of a key-path walk.
///
/// NB: the one unsafe part of slices. `offset(of:)` only answers for a stored property (the
/// standard library returns `nil` for anything computed), and the field is read through the
/// same borrow of the frame that ``EnvironmentStack/current`` takes, so the memory is an
/// initialised value of that type, alive for the read.
@usableFromInline
enum InPlaceField<App: EnvironmentSchema, Field> {
    /// The field's byte offset in the environment, if `path` is a stored property.
    @usableFromInline
    static func offset(of path: WritableKeyPath<App.Services, Field>) -> Int? {
        guard let services = MemoryLayout<HabitatEnvironment<App>>.offset(of: \HabitatEnvironment<App>.services),
              let field = MemoryLayout<App.Services>.offset(of: path)
        else { return nil }
        return services + field
    }

    /// A copy of the field at `offset` in the calling task's current environment.
    @inlinable
    static func read(_ stack: EnvironmentStack<App>, at offset: Int) -> Field {
        let slot = currentReaderSlot()
        let frame = stack.activeStateUnretained._withUnsafeGuaranteedRef { $0.frame(for: slot) }
        slot.pointee.borrows &+= 1
        defer { slot.pointee.endBorrow() }
        return frame._withUnsafeGuaranteedRef {
            (UnsafeRawPointer($0.environmentAddress) + offset).assumingMemoryBound(to: Field.self).pointee
        }
    }
}
