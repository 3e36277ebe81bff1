/// Finds the value a `TaskLocal` has in the calling task, in place.
///
/// `TaskLocal.get()` is generic and compiled in the Concurrency library, so it copies the value
/// out through its value witnesses and retains it: half of what a read inside a scope cost (the
/// "How the stack works" article has the measurement). `object(in:)` asks the runtime for the
/// value's address instead, the call `get()` itself makes.
///
/// It rests on three assumptions, true of every Swift runtime since 5.5:
/// `swift_task_localValueGet` takes the key `TaskLocal` passes (the object's address); it
/// returns the address of the bound value's storage, or `nil` when none is bound; and the
/// value (a single optional class reference) is stored as one pointer, zero for `nil`.
/// Building with `-Xswiftc -DHABITAT_PLAIN_TASKLOCAL` calls `TaskLocal.get()` instead and
/// relies on none of them; CI runs the suite both ways.
@usableFromInline
enum TaskLocalLookup {
    /// The object `local` holds in the calling task, unretained, or `nil`. The object lives as
    /// long as the caller runs inside the `withValue` that bound it.
    @inlinable
    static func object<Object: AnyObject>(in local: TaskLocal<Object?>) -> UnsafeMutableRawPointer? {
        #if HABITAT_PLAIN_TASKLOCAL
        return local.get().map { Unmanaged.passUnretained($0).toOpaque() }
        #else
        let key = UnsafeRawPointer(Unmanaged.passUnretained(local).toOpaque())
        guard let storage = habitatTaskLocalValueGet(key) else { return nil }
        return storage.load(as: UnsafeMutableRawPointer?.self)
        #endif
    }
}

#if !HABITAT_PLAIN_TASKLOCAL
/// The Concurrency runtime's lookup behind `TaskLocal.get()`.
@usableFromInline
@_silgen_name("swift_task_localValueGet")
func habitatTaskLocalValueGet(_ key: UnsafeRawPointer) -> UnsafeMutableRawPointer?
#endif
