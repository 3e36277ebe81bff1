package import Habitat

// A test's own session storage, for HabitatTesting's trait: inside a test's scope the stack's
// saves and restores that would reach the app's real store (a file, user defaults) go to a store
// of the test's own instead, and every save and restore is kept in a ledger.

/// A test's own session storage: the store its saves and restores go to instead of a durable
/// one, what the test's code saved and restored, in order, and the autosaves it turned on.
package final class TestStorage<App: EnvironmentSchema>: Sendable {
    /// What the test's code did with its stores.
    package enum Entry: Sendable {
        /// A save, as the store holds it afterwards.
        case saved(SessionSnapshot<App>?)
        /// A restore, and what it read (`nil`: nothing saved).
        case restored(SessionSnapshot<App>?)
    }

    /// The test's own store: fresh and in memory, or the one the test named on the trait.
    let own: SessionStore<App>
    /// Whether the test named its store: then every save and restore goes there.
    let named: Bool
    /// The entries, and, by stack, the autosaves the test turned on and their stores.
    private let state = LockedBox<(entries: [Entry], autosaves: [ObjectIdentifier: (Autosave<App>, SessionStore<App>)])>(([], [:]))

    /// Storage whose own store is `named`, or a fresh in-memory one.
    package init(named: SessionStore<App>?) {
        own = named ?? .inMemory()
        self.named = named != nil
    }

    /// The entries so far, in order.
    package var entries: [Entry] { state.withLock { $0.entries } }

    /// Where a save or restore the app's code aims at `sessions` goes: the test's own store when
    /// `sessions` is durable (a file, user defaults: the app's real one) or the test named its
    /// store; otherwise `sessions` (in memory: the test's, used as named).
    func resolve(_ sessions: SessionStore<App>) -> SessionStore<App> {
        named || sessions.isDurable ? own : sessions
    }

    func record(_ entry: Entry) {
        state.withLock { $0.entries.append(entry) }
    }

    /// Records a save of `environment` to `sessions`: what the store holds now, each session in
    /// the state the stack saved it in (a load alone says `restored`, even right after a login).
    func recordSave(to sessions: SessionStore<App>, of environment: HabitatEnvironment<App>) {
        guard var snapshot = (try? sessions.load()) ?? nil else { return record(.saved(nil)) }
        func stateSaved(_ session: inout UserSession<App.User>) {
            let saved = ([environment.session].compactMap { $0 } + environment.otherAccounts).first { $0.token == session.token }
            if let saved { session.state = saved.state }
        }
        if snapshot.session != nil { stateSaved(&snapshot.session!) }
        for index in snapshot.otherAccounts.indices { stateSaved(&snapshot.otherAccounts[index]) }
        record(.saved(snapshot))
    }

    /// Turns the test's autosave on for the stack that owns `autosave`, to `sessions`: that
    /// stack's transitions in the test's scope save there at once.
    func enableAutosave(on autosave: Autosave<App>, to sessions: SessionStore<App>) {
        let first = state.withLock { $0.autosaves.updateValue((autosave, sessions), forKey: ObjectIdentifier(autosave)) == nil }
        if first { autosave.enabled.wrappingAdd(1, ordering: .acquiringAndReleasing) }
    }

    /// Where the test's autosave for the stack that owns `autosave` saves, if it is on.
    func autosaveTarget(_ autosave: Autosave<App>) -> SessionStore<App>? {
        state.withLock { $0.autosaves[ObjectIdentifier(autosave)]?.1 }
    }

    /// Ends the test: its autosaves stop.
    package func end() {
        // NB: a closure, not `\.0`: a key path into a generic tuple is instantiated at run time
        // on every call, which cost most of a test's isolation (`Benchmarks/isolation.sh`).
        let autosaves = state.withLock { state in defer { state.autosaves = [:] }; return state.autosaves.values.map { $0.0 } }
        for autosave in autosaves { autosave.enabled.wrappingSubtract(1, ordering: .acquiringAndReleasing) }
    }

    /// The calling task's test storage for this app, if it runs in a test's scope.
    static var current: TestStorage<App>? { TestStorageBinding.current as? TestStorage<App> }
}

/// The test storage bound for the calling task, by HabitatTesting's trait.
package enum TestStorageBinding {
    @TaskLocal package static var current: (any Sendable & AnyObject)?
}

extension SessionStore {
    /// Whether the snapshots live outside the process: a file, user defaults.
    var isDurable: Bool {
        func durable(_ store: any KeyValueStore) -> Bool {
            if let scoped = store as? ScopedStore { return durable(scoped.base) }
            return store is JSONFileStore || store is UserDefaultsStore
        }
        return durable(store)
    }
}
