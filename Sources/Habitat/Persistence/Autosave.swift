/// Where an ``EnvironmentStack`` saves itself after each session or configuration change, once
/// ``EnvironmentStack/enableAutosave(to:onError:)`` was called.
@usableFromInline
// Safe: `target` is read and written only with `lock` held, and saves run under it too, so
// they happen one at a time and each writes the state as it is when it runs. `enabled` is
// atomic, and only a hint: the lock decides.
final class Autosave<App: EnvironmentSchema>: @unchecked Sendable {
    private let lock = Lock()
    private var target: (sessions: SessionStore<App>, onError: @Sendable (SnapshotError) -> Void)?
    /// 1 while a target is set, so transitions skip autosave with one load when it is off.
    @usableFromInline let enabled = AtomicCounter(0)

    init() {}

    func enable(_ sessions: SessionStore<App>, onError: @escaping @Sendable (SnapshotError) -> Void) {
        lock.withLock {
            target = (sessions, onError)
            enabled.store(1)
        }
    }

    func disable() {
        lock.withLock {
            target = nil
            enabled.store(0)
        }
    }

    /// Saves `environment()` if autosave is on, reporting a failure to the error handler.
    func save(_ environment: () -> HabitatEnvironment<App>) {
        lock.withLock {
            guard let target else { return }
            do throws(SnapshotError) {
                try target.sessions.save(environment())
            } catch {
                target.onError(error)
            }
        }
    }
}

extension EnvironmentStack {
    /// Saves the session and configuration to `sessions` after every ``login(user:token:)``,
    /// ``logout()``, user or configuration update, and session refresh on the global stack.
    ///
    /// Pushes, pops and replacements are never saved: they are for tests and previews. Changes
    /// made inside a ``withEnvironment(_:operation:)-((HabitatEnvironment<App>)->Void,_)`` scope
    /// are never saved either. Each save writes the stack's current state, so saves that race end
    /// with the latest.
    ///
    /// ```swift
    /// AppEnvironment.enableAutosave(to: sessions) { error in
    ///     logger.error("could not save the session: \(error)")
    /// }
    /// ```
    /// - Parameters:
    ///   - sessions: Where to save.
    ///   - onError: Called with the error when a save fails; ignores it by default.
    public func enableAutosave(
        to sessions: SessionStore<App>,
        onError: @escaping @Sendable (SnapshotError) -> Void = { _ in }
    ) {
        autosave.enable(sessions, onError: onError)
    }

    /// Stops saving after changes.
    public func disableAutosave() {
        autosave.disable()
    }

    /// Called after a session or configuration transition committed.
    @inlinable
    func didTransition() {
        if _slowPath(autosave.enabled.load() != 0) { autosaveIfUnscoped() }
    }

    @usableFromInline
    func autosaveIfUnscoped() {
        guard scopedStateUnretained() == nil else { return }
        autosave.save { root.topEnvironment }
    }
}
