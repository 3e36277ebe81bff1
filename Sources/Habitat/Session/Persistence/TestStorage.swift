// A test's own session storage, for HabitatTesting's trait: inside a test's scope the stack's
// saves and restores go to it instead of the store the app names, and it keeps a ledger of them.

/// A test's own session storage: an in-memory store and secret store (or the store the test
/// names), the saves and restores the test's code made, in order, and whether it turned
/// autosave on.
package final class TestStorage<App: EnvironmentSchema>: Sendable {
    /// What the test's code did with the storage.
    package enum Entry: Sendable {
        /// A save, as the store holds it afterwards.
        case saved(SessionSnapshot<App>?)
        /// A restore, and what it read (`nil`: nothing saved).
        case restored(SessionSnapshot<App>?)
    }

    /// Where the test's saves and restores go.
    package let sessions: SessionStore<App>
    /// The entries, and the autosaves (of the stacks) the test turned on.
    private let state = LockedBox<(entries: [Entry], autosaves: [ObjectIdentifier: Autosave<App>])>(([], [:]))

    package init(sessions: SessionStore<App> = .inMemory()) {
        self.sessions = sessions
    }

    /// The entries so far, in order.
    package var entries: [Entry] { state.withLock { $0.entries } }

    func record(_ entry: Entry) {
        state.withLock { $0.entries.append(entry) }
    }

    /// Records a save: what the store holds now.
    func recordSave() {
        record(.saved((try? sessions.load()) ?? nil))
    }

    /// Turns the test's autosave on for the stack that owns `autosave`: that stack's
    /// transitions in the test's scope save to the test's storage.
    func enableAutosave(on autosave: Autosave<App>) {
        let first = state.withLock { $0.autosaves.updateValue(autosave, forKey: ObjectIdentifier(autosave)) == nil }
        if first { autosave.enabled.wrappingAdd(1, ordering: .acquiringAndReleasing) }
    }

    /// Whether the test turned autosave on for the stack that owns `autosave`.
    func autosaves(_ autosave: Autosave<App>) -> Bool {
        state.withLock { $0.autosaves[ObjectIdentifier(autosave)] != nil }
    }

    /// Ends the test: its autosaves stop.
    package func end() {
        let autosaves = state.withLock { state in defer { state.autosaves = [:] }; return state.autosaves.values }
        for autosave in autosaves { autosave.enabled.wrappingSubtract(1, ordering: .acquiringAndReleasing) }
    }

    /// The calling task's test storage for this app, if it runs in a test's scope.
    static var current: TestStorage<App>? { TestStorageBinding.current as? TestStorage<App> }

}

/// The test storage bound for the calling task, by HabitatTesting's trait.
package enum TestStorageBinding {
    @TaskLocal package static var current: (any Sendable & AnyObject)?
}
