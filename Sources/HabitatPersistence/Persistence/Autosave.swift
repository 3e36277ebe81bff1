import Dispatch
public import Habitat

/// Where an `EnvironmentStack` saves itself after each session or configuration change, once
/// ``Habitat/EnvironmentStack/enableAutosave(to:onError:)`` was called.
///
/// A change only marks the stack dirty; a worker on a background queue does the saving, one
/// save at a time, each writing the stack's state as it is when the save starts. Changes made
/// while a save runs are coalesced into the next one, so a burst of changes costs a few saves,
/// and the last state always lands.
// NB: the saves run outside the state's lock, on the one worker that `working` admits. `enabled`
// (the stack's attachments' `listening`) is atomic, and only a hint: the state decides.
final class Autosave<App: EnvironmentSchema>: TransitionListener {
    /// NB: a class, so that marking a save as pending moves one reference, not the store's
    /// and the closures' several.
    final class Target: Sendable {
        let sessions: SessionStore<App>
        let onError: @Sendable (SnapshotError) -> Void
        /// Reads the state to save, when the save starts; `nil` once the stack is gone.
        let read: @Sendable () -> HabitatEnvironment<App>?
        /// Takes the stored session, when a save found the store had moved past the stack's.
        let adopt: @Sendable (_ stored: UserSession<App.User>?, _ others: [UserSession<App.User>], _ replacing: String?) -> Bool
        /// Told of each save that landed, with what was saved: a test's ledger, for a stack the
        /// test made itself.
        let saved: (@Sendable (SessionStore<App>, HabitatEnvironment<App>) -> Void)?

        init(
            sessions: SessionStore<App>,
            onError: @escaping @Sendable (SnapshotError) -> Void,
            read: @escaping @Sendable () -> HabitatEnvironment<App>?,
            adopt: @escaping @Sendable (_ stored: UserSession<App.User>?, _ others: [UserSession<App.User>], _ replacing: String?) -> Bool,
            saved: (@Sendable (SessionStore<App>, HabitatEnvironment<App>) -> Void)? = nil
        ) {
            self.sessions = sessions
            self.onError = onError
            self.read = read
            self.adopt = adopt
            self.saved = saved
        }
    }

    /// The worker's life: idle, or saving (scheduled or writing) with the next save asked for
    /// and the flushes waiting for it to go idle. `pending` and the waiters exist only while a
    /// worker does: a change made while idle starts one.
    private enum Worker {
        case idle
        case saving(pending: Target?, flushWaiters: [CheckedContinuation<Void, Never>])
    }

    private struct State {
        /// Where changes are saved, while autosave is on.
        var target: Target?
        var worker = Worker.idle
        /// Why the last save failed; `nil` after a save that succeeded.
        var failure: SnapshotError?
        /// What the stack knows its store holds (see `KnownSession`): set by restores and saves.
        var known: KnownSession?
    }

    private let state = LockedBox(State())
    /// How many reasons transitions have to look for a save: 1 while a target is set, plus one
    /// per test whose own autosave is on for this stack (see `TestStorage`). Transitions skip
    /// autosave with one load when it is 0.
    let enabled: AtomicWord

    init(enabled: AtomicWord) { self.enabled = enabled }

    /// After a committed transition on `stack`: a save on the worker for the app's stack; in a
    /// test's scope, the test's own autosave, saved at once to the test's storage and recorded.
    func didTransition(on stack: EnvironmentStack<App>) {
        guard stack.scopedStateUnretained() == nil else {
            let environment = stack.current
            if let storage = TestStorage<App>.current, let target = storage.autosaveTarget(self), (try? target.save(environment)) != nil {
                storage.recordSave(to: target, of: environment)
            }
            return
        }
        requestSave()
    }

    func enable(_ target: Target) {
        state.withLock {
            if $0.target == nil { enabled.wrappingAdd(1, ordering: .acquiringAndReleasing) }
            $0.target = target
        }
    }

    /// The store autosave writes to, if it is on.
    var sessions: SessionStore<App>? {
        state.withLock { $0.target?.sessions }
    }

    /// Stops saving later changes; a save already asked for still happens.
    func disable() {
        state.withLock {
            if $0.target != nil { enabled.wrappingSubtract(1, ordering: .acquiringAndReleasing) }
            $0.target = nil
        }
    }

    /// Asks for a save of the current state, if autosave is on.
    func requestSave() {
        let start: Bool = state.withLock { state in
            guard let target = state.target else { return false }
            switch state.worker {
            case .idle:
                state.worker = .saving(pending: target, flushWaiters: [])
                return true
            case .saving(_, let waiters):
                state.worker = .saving(pending: target, flushWaiters: waiters)
                return false
            }
        }
        if start {
            DispatchQueue.global(qos: .utility).async { self.drain() }
        }
    }

    /// Saves until nothing is pending, then wakes whoever waits for a flush.
    private func drain() {
        while true {
            // NB: whether to stop is decided under the lock, with `pending`: a change that comes
            // in later finds the worker idle and starts one of its own.
            let (next, waiters): (Target?, [CheckedContinuation<Void, Never>]) = state.withLock { state in
                guard case .saving(let pending, let waiters) = state.worker else { return (nil, []) }
                if let pending {
                    state.worker = .saving(pending: nil, flushWaiters: waiters)
                    return (pending, [])
                }
                state.worker = .idle
                return (nil, waiters)
            }
            guard let next else {
                for waiter in waiters { waiter.resume() }
                return
            }
            do throws(SnapshotError) {
                let environment = try save(next.read, to: next.sessions, adopt: next.adopt)
                state.withLock { $0.failure = nil }
                if let environment { next.saved?(next.sessions, environment) }
            } catch {
                state.withLock { $0.failure = error }
                next.onError(error)
            }
        }
    }

    /// Saves the environment `read` returns (nothing when it returns `nil`) knowing what the stack
    /// last saw of the store; a save the store has moved past hands the stored session to `adopt`
    /// instead. Returns the environment it saved, if any.
    @discardableResult
    func save(
        _ read: () -> HabitatEnvironment<App>?,
        to sessions: SessionStore<App>,
        adopt: (_ stored: UserSession<App.User>?, _ others: [UserSession<App.User>], _ replacing: String?) -> Bool
    ) throws(SnapshotError) -> HabitatEnvironment<App>? {
        // NB: the knowledge first, then the environment. The follower and the restore record what
        // they saw of the store only after the stack took it, so an environment read after the
        // knowledge is never older than it. Read the other way round, a follower adopting a
        // refresh from another process in between made an old token look current, and the save
        // wrote it back over the refresh (seen once in CI: AccountProcessTests, under the thread
        // sanitizer); recorded the other way round, so did a save between the two.
        let known = knowledge
        guard let environment = read() else { return nil }
        switch try sessions.save(environment, known: known) {
        case .saved(let now):
            if let now { knowledge = now }
        case .adopted(let stored, let others, let now):
            // NB: the knowledge only when the stack took what was saved: when a change made here
            // since superseded it, the stack still holds what it read, and knowing the newer
            // store would make its next save take the accounts it didn't take for its own
            // changes, and write them back over the store's (a refresh undone, seen under load:
            // AccountProcessTests). Knowing the older store, that save merges again.
            if adopt(stored, others, environment.session?.token.secret) { knowledge = now }
        }
        return environment
    }

    /// What the stack knows its store holds.
    var knowledge: KnownSession? {
        get { state.withLock { $0.known } }
        set { state.withLock { $0.known = newValue } }
    }

    /// Why the last save failed, if it did.
    var lastFailure: SnapshotError? {
        state.withLock { $0.failure }
    }

    /// Saves again when the last save failed (a locked secret store that is readable now).
    func retryFailedSave() {
        if lastFailure != nil { requestSave() }
    }

    /// Returns once every save asked for so far has been written (or has failed).
    func flush() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let idle = state.withLock { state in
                guard case .saving(let pending, var waiters) = state.worker else { return true }
                waiters.append(continuation)
                state.worker = .saving(pending: pending, flushWaiters: waiters)
                return false
            }
            if idle { continuation.resume() }
        }
    }
}

extension EnvironmentStack {
    /// Saves the session and configuration to `sessions` after every `login(user:token:)`,
    /// `logout()`, user or configuration update, and session refresh on the global stack.
    ///
    /// Saving happens on a background queue, never on the caller's thread: a transition only
    /// marks the stack as needing a save. Saves run one at a time and each writes the stack's
    /// state as it is when it starts, so a burst of changes is written a few times at most, and
    /// the last state always lands. Call `flushAutosave()` to wait for the saves asked for so
    /// far: before the app is suspended, or before a test looks at the store.
    ///
    /// Pushes, pops and replacements are never saved: they are for tests and previews. Changes
    /// made inside a `withEnvironment(_:operation:)` scope
    /// are never saved either, except in a test's scope made by HabitatTesting's `.environment`
    /// trait on this stack: there, autosave is the test's own and saves each change at once, to
    /// `sessions` when it is in memory, and to a store of the test's own instead of a file or
    /// user defaults (HabitatTesting's `testLedger` lists what it saved). A stack the test made
    /// itself, called in such a scope, autosaves as in the app, to the same choice of store.
    ///
    /// ```swift
    /// appEnvironment.enableAutosave(to: sessions) { error in
    ///     logger.error("could not save the session: \(error)")
    /// }
    /// ```
    /// - Parameters:
    ///   - sessions: Where to save.
    ///   - onError: Called, on the saving queue, with the error when a save fails; the next
    ///     change tries again. Ignores the error by default.
    public func enableAutosave(
        to sessions: SessionStore<App>,
        onError: @escaping @Sendable (SnapshotError) -> Void = { _ in }
    ) {
        let storage = TestStorage<App>.current
        // NB: in a test's scope on this stack, autosave is the test's: it saves the scope's
        // changes at once, to the test's own storage. A stack the calling task has no scope on
        // (one the test made itself) autosaves as in the app, to the store the test's storage
        // gives for `sessions`: the stack's changes happen outside any scope, where the test's
        // autosave never looks (a test's own stack saved nothing that way: issue 58).
        if let storage, scopedStateUnretained() != nil {
            return storage.enableAutosave(on: autosave, to: storage.resolve(sessions))
        }
        var saved: (@Sendable (SessionStore<App>, HabitatEnvironment<App>) -> Void)?
        if let storage { saved = { sessions, environment in storage.recordSave(to: sessions, of: environment) } }
        // NB: weak, as the stack owns its autosave.
        autosave.enable(.init(
            sessions: storage?.resolve(sessions) ?? sessions, onError: onError,
            read: { [weak self] in self?.filledRoot.topEnvironment },
            adopt: { [weak self] stored, others, replacing in self?.adoptStoredSession(stored, others: others, replacing: replacing) ?? false },
            saved: saved
        ))
    }

    /// Stops saving after changes. Saves already asked for still happen; `flushAutosave()`
    /// waits for them.
    public func disableAutosave() {
        autosave.disable()
    }

    /// Waits until every autosave asked for so far has been written, or has failed and been
    /// reported to the error handler.
    ///
    /// ```swift
    /// appEnvironment.login(user: account, token: token)
    /// await appEnvironment.flushAutosave()   // the session is on disk now
    /// ```
    public func flushAutosave() async {
        await autosave.flush()
    }

    /// Takes the store's accounts (`stored` active, `others` beside it) if the stack's session
    /// is still the one (token `replacing`) the store moved past; a change made since wins.
    /// Returns whether the stack holds the store's accounts now: taken, or held already.
    @discardableResult
    func adoptStoredSession(_ stored: UserSession<App.User>?, others: [UserSession<App.User>], replacing: String?) -> Bool {
        switch run(.storeChanged(stored, others: others, replacing: replacing), on: filledRoot, fileID: #fileID, line: #line) {
        case .applied, .unchanged: true
        case .superseded, .refused: false
        }
    }

    /// Where to save after session and configuration changes, if anywhere.
    var autosave: Autosave<App> {
        attachments.value { Autosave(enabled: attachments.listening) }
    }

    /// The autosave store, when autosave is on and the calling task acts on the app's stack
    /// (not a scope): the one answer to "does what this task does reach the store?".
    func autosaveStore() -> SessionStore<App>? {
        scopedStateUnretained() == nil ? autosave.sessions : nil
    }
}
