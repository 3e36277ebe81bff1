/// What an app's refresh call found out about a session.
public enum SessionRefresh<User: Sendable>: Sendable {
    /// The server accepted the session and issued `token`; `user` carries fresh user data, or
    /// `nil` to keep the user as it was.
    case refreshed(token: AuthToken, user: User? = nil)
    /// The server no longer accepts the session: log out.
    case ended
}

/// What ``EnvironmentStack/refreshSession(account:isolation:fileID:line:using:)`` did.
public enum SessionRefreshOutcome: Sendable, Hashable {
    /// The session is ``AuthState/authenticated`` with the new token.
    case refreshed
    /// The session is ``AuthState/authenticated`` with the new token, but autosave could not
    /// save it (`problem` says why: a locked secret store, say), so it is not yet durable: an
    /// app killed now would relaunch with the old token. Autosave saves it with the next
    /// change, and at once on
    /// ``EnvironmentStack/protectedDataDidBecomeAvailable(for:fileID:line:)``.
    case refreshedNotSaved(problem: SnapshotError)
    /// The store autosave writes to was made with `refreshesTokens: false` (an app extension's),
    /// and the app has not saved a newer token yet: nothing was asked. Try again later.
    case waitingForRotation
    /// The session was gone and the stack logged out; `expired` tells whether the token had
    /// expired by the environment's clock before the refresh.
    case ended(expired: Bool)
    /// Nobody was logged in; nothing was asked.
    case notLoggedIn
    /// The session is ``AuthState/awaitingToken``: its token still can't be read, so nothing
    /// was asked. Refresh again (or restore) once the secret store is available.
    case awaitingToken
    /// The session changed while the refresh ran; its result was dropped.
    case superseded
}
