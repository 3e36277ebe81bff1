/// The scopes the current task is in, innermost first, one link per `withEnvironment` call.
///
/// NB: a task-local can't be generic, so links hold their stack's state type-erased and are
/// matched by the stack's process-unique `id`. A link keeps its state for life: when a scope
/// ends and nothing outlives it, link and state go back to the stack's pool together.
@usableFromInline
// Safe: `stackID` and `stateAddress` never change, and `state` is a `StackState`, whose
// mutable parts are all behind its own lock or atomic (it can't say `Sendable` itself, being
// a `ManagedBuffer`). `state`, `next` and `nextAddress` are written only while the link is
// bound in no task and referenced by one thread alone (the one ending its scope, or the one
// that took it from the pool, whose lock orders those writes before any later use), and read
// only while it is bound.
final class ScopeLink: @unchecked Sendable {
    @usableFromInline let stackID: UInt64
    /// The scope's `StackState`; `nil` only for the moment `EnvironmentStack.endScope` takes it
    /// out to see whether anything else references it.
    @exclusivity(unchecked) @usableFromInline var state: AnyObject?
    @exclusivity(unchecked) @usableFromInline var next: ScopeLink?
    /// `state` and `next` as plain addresses, for the read path.
    ///
    /// NB: reading a strong reference out of a class retains it; a read inside a scope walks
    /// these instead, and so writes no reference count that other threads share.
    @usableFromInline let stateAddress: UnsafeMutableRawPointer
    @exclusivity(unchecked) @usableFromInline var nextAddress: UnsafeMutableRawPointer?

    @usableFromInline
    init(stackID: UInt64, state: AnyObject, next: ScopeLink?) {
        self.stackID = stackID
        self.state = state
        self.next = next
        stateAddress = Unmanaged.passUnretained(state).toOpaque()
        nextAddress = next.map { Unmanaged.passUnretained($0).toOpaque() }
    }

    /// Makes `next` the scope this link's scope sits in. Only on a link no task is bound to.
    @inlinable
    func relink(to next: ScopeLink?) {
        nextAddress = next.map { Unmanaged.passUnretained($0).toOpaque() }
        self.next = next
    }
}

@usableFromInline
enum Scopes {
    /// The innermost scope of the current task (inherited by its child tasks).
    @usableFromInline
    static let innermost = TaskLocal<ScopeLink?>(wrappedValue: nil)

    /// The key the Concurrency runtime files `innermost`'s values under: the `TaskLocal`
    /// object's address, as `TaskLocal` itself passes it. Stacks keep a copy.
    @usableFromInline
    static var key: UnsafeRawPointer { UnsafeRawPointer(Unmanaged.passUnretained(innermost).toOpaque()) }

    /// The innermost link of the calling task, unretained, or `nil` outside every scope.
    ///
    /// NB: `TaskLocal.get()` is generic and compiled in the Concurrency library, so it copies
    /// the value out through its value witnesses and retains it: most of what a read inside a
    /// scope cost. This asks the runtime for the value's address instead, the call `get()`
    /// itself makes, and reads the link in place. The link stays alive while the caller runs
    /// inside the `withValue` that bound it.
    ///
    /// The runtime lookup rests on three assumptions, true of every Swift runtime since 5.5:
    /// `swift_task_localValueGet` takes the key `TaskLocal` passes (the object's address) and
    /// returns the address of the bound value's storage, or `nil`; and a `ScopeLink?` is stored
    /// as one pointer, zero for `nil`. Building with `-Xswiftc -DHABITAT_PLAIN_TASKLOCAL` uses
    /// `TaskLocal.get()` instead, relying on none of them; CI runs the suite both ways.
    @inlinable
    static func innermostAddress(key: UnsafeRawPointer) -> UnsafeMutableRawPointer? {
        #if HABITAT_PLAIN_TASKLOCAL
        return innermost.get().map { Unmanaged.passUnretained($0).toOpaque() }
        #else
        guard let storage = habitatTaskLocalValueGet(key) else { return nil }
        return storage.load(as: UnsafeMutableRawPointer?.self)
        #endif
    }
}

#if !HABITAT_PLAIN_TASKLOCAL
/// The Concurrency runtime's lookup behind `TaskLocal.get()`: the address of the value bound
/// for `key` in the current task (or, outside tasks, the current thread), or `nil` if none is.
@usableFromInline
@_silgen_name("swift_task_localValueGet")
func habitatTaskLocalValueGet(_ key: UnsafeRawPointer) -> UnsafeMutableRawPointer?
#endif
