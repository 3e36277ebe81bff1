/// What another product keeps on a stack: HabitatPersistence's autosave and its refreshes in
/// flight, each made on first use, and the one listener a committed transition tells.
///
/// NB: the seam between the products. The core knows a transition happened; what is saved, and
/// where, is the persistence product's business.
@usableFromInline
package final class StackAttachments<App: EnvironmentSchema>: Sendable {
    /// How many reasons transitions have to tell the listener: a transition skips it with one
    /// load while this is 0.
    @usableFromInline package let listening = AtomicWord(0)
    private let state = LockedBox(State())

    private struct State {
        var values: [ObjectIdentifier: any Sendable] = [:]
        var listener: (any TransitionListener<App>)?
    }

    init() {}

    /// The attachment of type `T`, made by `make` on first use; one that is a
    /// ``TransitionListener`` becomes the listener.
    package func value<T: AnyObject & Sendable>(_ make: () -> T) -> T {
        state.withLock { state in
            if let value = state.values[ObjectIdentifier(T.self)] as? T { return value }
            let value = make()
            state.values[ObjectIdentifier(T.self)] = value
            if let listener = value as? any TransitionListener<App> { state.listener = listener }
            return value
        }
    }

    @usableFromInline
    func notify(_ stack: EnvironmentStack<App>) {
        state.withLock { $0.listener }?.didTransition(on: stack)
    }
}

/// Told after a session or configuration transition committed on a stack, while the stack's
/// attachments are ``StackAttachments/listening``.
package protocol TransitionListener<App>: AnyObject, Sendable {
    associatedtype App: EnvironmentSchema
    func didTransition(on stack: EnvironmentStack<App>)
}

extension EnvironmentStack {
    /// Called after a session or configuration transition committed.
    @inlinable
    func didTransition() {
        if _slowPath(attachments.listening.load(ordering: .acquiring) != 0) { attachments.notify(self) }
    }
}
