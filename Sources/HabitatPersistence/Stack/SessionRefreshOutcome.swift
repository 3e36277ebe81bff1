import Habitat

/// What ``Habitat/EnvironmentStack/refreshSession(account:isolation:fileID:line:using:)`` did.
public enum SessionRefreshOutcome: Sendable, Hashable {
    /// The session is `AuthState.authenticated` with the new token.
    case refreshed
    /// The session is `AuthState.authenticated` with the new token, but autosave could not
    /// save it (`problem` says why: a locked secret store, say), so it is not yet durable: an
    /// app killed now would relaunch with the old token. Autosave saves it with the next
    /// change, and at once on
    /// ``Habitat/EnvironmentStack/protectedDataDidBecomeAvailable(for:fileID:line:)``.
    case refreshedNotSaved(problem: SnapshotError)
    /// The store autosave writes to was made with `refreshesTokens: false` (an app extension's),
    /// and the app has not saved a newer token yet: nothing was asked. Try again later.
    case waitingForRotation
    /// The session was gone and the stack logged out; `expired` tells whether the token had
    /// expired by the environment's clock before the refresh.
    case ended(expired: Bool)
    /// Nobody was logged in; nothing was asked.
    case notLoggedIn
    /// The session is `AuthState.awaitingToken`: its token still can't be read, so nothing
    /// was asked. Refresh again (or restore) once the secret store is available.
    case awaitingToken
    /// The session changed while the refresh ran; its result was dropped.
    case superseded
}

extension SessionMachine {
    /// What a refresh's caller hears, from the outcome of its answer's event: `expired` whether
    /// the token had expired, `joined` whether the caller waited for another's flight (which
    /// applied the answer on this stack already).
    static func refreshOutcome(_ answer: SessionRefresh<App.User>, _ outcome: Outcome, expired: Bool, joined: Bool) -> SessionRefreshOutcome {
        switch (answer, outcome) {
        case (.refreshed, .applied), (.refreshed, .unchanged): .refreshed
        case (.ended, .applied): .ended(expired: expired)
        // Signed out already: by the leader of this refresh, or by someone else.
        case (.ended, .unchanged): joined ? .ended(expired: expired) : .superseded
        case (_, .superseded), (_, .refused): .superseded
        }
    }
}
