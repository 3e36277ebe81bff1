/// The scopes the current task is in, innermost first, one link per `withEnvironment` call.
///
/// NB: a task-local can't be generic, so links hold their stack's state type-erased and are
/// matched by the stack's process-unique `id`.
@usableFromInline
// Safe: every property is immutable, and `state` is a `StackState`, whose mutable parts are
// all behind its own lock or atomic (it can't say `Sendable` itself, being a `ManagedBuffer`).
final class ScopeLink: @unchecked Sendable {
    @usableFromInline let stackID: UInt64
    @usableFromInline let state: AnyObject
    @usableFromInline let next: ScopeLink?

    @usableFromInline
    init(stackID: UInt64, state: AnyObject, next: ScopeLink?) {
        self.stackID = stackID
        self.state = state
        self.next = next
    }
}

@usableFromInline
enum Scopes {
    /// The innermost scope of the current task (inherited by its child tasks).
    @usableFromInline
    static let innermost = TaskLocal<ScopeLink?>(wrappedValue: nil)
}
