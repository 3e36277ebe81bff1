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
    private let state = LockedBox<(entries: [Entry], autosaves: Bool)>(([], false))

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

    /// Turns the test's autosave on: its transitions save to its storage.
    func enableAutosave() {
        let first = state.withLock { state in defer { state.autosaves = true }; return !state.autosaves }
        if first { testAutosaving.wrappingAdd(1, ordering: .acquiringAndReleasing) }
    }

    var autosaves: Bool { state.withLock { $0.autosaves } }

    /// Ends the test: its autosave, if on, stops counting.
    package func end() {
        let was = state.withLock { state in defer { state.autosaves = false }; return state.autosaves }
        if was { testAutosaving.wrappingSubtract(1, ordering: .acquiringAndReleasing) }
    }

    /// The calling task's test storage for this app, if it runs in a test's scope.
    static var current: TestStorage<App>? { TestStorageBinding.current as? TestStorage<App> }

}

/// The test storage bound for the calling task, by HabitatTesting's trait.
package enum TestStorageBinding {
    @TaskLocal package static var current: (any Sendable & AnyObject)?
}

/// How many tests have autosave on in their storage.
@usableFromInline let testAutosaving = AtomicWord(0)
