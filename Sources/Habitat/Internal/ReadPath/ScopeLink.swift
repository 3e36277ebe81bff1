/// A scope bound to a task: its stack's id, and the scope it sits in.
///
/// The task-local `Scopes.innermost` holds the innermost link; each link's `next` is the
/// enclosing one. A task-local can't be generic, so every ``StackState`` is a link, matched to
/// its stack by the stack's process-unique `stackID`.
@usableFromInline
// Safe: `stackID` never changes; `next` and `nextAddress` are written only on a link bound in no
// task and referenced by one thread alone (the one ending its scope, or the one that took it
// from the pool, whose lock orders those writes before any later use), and read only while it
// is bound.
package class ScopeLink: @unchecked Sendable {
    @usableFromInline let stackID: UInt64
    @exclusivity(unchecked) @usableFromInline var next: ScopeLink?
    /// `next`'s address, for the read path.
    ///
    /// NB: reading a strong reference out of a class retains it; a read inside a scope walks
    /// these addresses instead, and so writes no reference count that other threads share.
    @exclusivity(unchecked) @usableFromInline var nextAddress: UnsafeMutableRawPointer?

    @inlinable
    init(stackID: UInt64) { self.stackID = stackID }

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

    /// The innermost link of the calling task, unretained, or `nil` outside every scope.
    @inlinable
    static var innermostAddress: UnsafeMutableRawPointer? { TaskLocalLookup.object(in: innermost) }

    /// The innermost link of the calling task, or `nil` outside every scope.
    @inlinable
    static var innermostLink: ScopeLink? {
        innermostAddress.map { Unmanaged<ScopeLink>.fromOpaque($0).takeUnretainedValue() }
    }
}
