import Foundation

extension EnvironmentStack {
    /// Saves the current environment's session and configuration to `sessions`.
    ///
    /// - Parameter sessions: Where to save.
    /// - Throws: ``SnapshotError/store(_:)`` when a store fails; the stack is unchanged.
    public func save(to sessions: SessionStore<App>) throws(SnapshotError) {
        try sessions.save(current)
    }

    /// Restores a saved session and configuration into the current environment.
    ///
    /// The restored session is ``AuthState/restored`` until ``refreshSession(isolation:using:)``
    /// confirms it; ``SessionDependent`` services receive its token. When nothing was saved, the
    /// stack is unchanged. When the saved app was logged out, the configuration is restored and
    /// nobody is logged in. Observers see one change of kind ``EnvironmentChangeKind/restore``.
    ///
    /// ```swift
    /// if let snapshot = try AppEnvironment.restore(from: sessions),
    ///    let session = snapshot.session, session.isExpired(at: Date()) {
    ///     // show the login screen, or refresh first
    /// }
    /// ```
    ///
    /// - Parameter sessions: Where to restore from.
    /// - Returns: What was restored, or `nil` when nothing was saved.
    /// - Throws: ``SnapshotError``; the stack and the stored data are unchanged then.
    @discardableResult
    public func restore(from sessions: SessionStore<App>) throws(SnapshotError) -> SessionSnapshot<App>? {
        guard let snapshot = try sessions.load() else { return nil }
        withActiveState { state in
            state.update(.restore) { environment in
                environment.config = snapshot.config
                environment.session = snapshot.session
                environment.applySession()
                return true
            }
        }
        return snapshot
    }

    /// Confirms the current session with the server, or ends it.
    ///
    /// `refresh` receives the current session (typically ``AuthState/restored`` after a launch)
    /// and returns a new token, optionally with fresh user data, or says the session is gone.
    /// The stack then becomes ``AuthState/authenticated`` with the new token, or logs out. If
    /// the session changed while `refresh` ran (the user logged out or someone else logged
    /// in), the result is dropped and ``SessionRefreshOutcome/superseded`` returned.
    ///
    /// ```swift
    /// let outcome = try await AppEnvironment.refreshSession { session in
    ///     switch try await api.refresh(session.token) {
    ///     case .ok(let token, let user): .refreshed(token: token, user: user)
    ///     case .revoked: .ended
    ///     }
    /// }
    /// ```
    ///
    /// `refresh` runs on the caller's actor, so a `@MainActor` view model can pass a closure
    /// that touches its own state.
    ///
    /// - Parameters:
    ///   - isolation: The actor `refresh` runs on; the caller's, by default.
    ///   - refresh: Asks the server about the session.
    /// - Returns: What happened.
    /// - Throws: Whatever `refresh` throws; the stack is unchanged then.
    public func refreshSession(
        isolation: isolated (any Actor)? = #isolation,
        using refresh: (UserSession<App.User>) async throws -> SessionRefresh<App.User>
    ) async rethrows -> SessionRefreshOutcome {
        guard let session = current.session else { return .notLoggedIn }
        let expired = session.isExpired(at: current.now())
        let answer = try await refresh(session)
        var outcome = SessionRefreshOutcome.superseded
        switch answer {
        case .refreshed(let token, let user):
            withActiveState { state in
                state.update(.refresh) { environment in
                    guard environment.session?.token == session.token else { return false }
                    environment.session = UserSession(user: user ?? session.user, token: token, state: .authenticated)
                    environment.applySession()
                    outcome = .refreshed
                    return true
                }
            }
        case .ended:
            withActiveState { state in
                state.update(.logout) { environment in
                    guard environment.session?.token == session.token else { return false }
                    outcome = .ended(expired: expired)
                    environment.logOut()
                    return true
                }
            }
        }
        if outcome != .superseded { didTransition() }
        return outcome
    }
}

/// What an app's refresh call found out about a session.
public enum SessionRefresh<User: Sendable>: Sendable {
    /// The server accepted the session and issued `token`; `user` carries fresh user data, or
    /// `nil` to keep the user as it was.
    case refreshed(token: AuthToken, user: User? = nil)
    /// The server no longer accepts the session: log out.
    case ended
}

/// What ``EnvironmentStack/refreshSession(isolation:using:)`` did.
public enum SessionRefreshOutcome: Sendable, Hashable {
    /// The session is ``AuthState/authenticated`` with the new token.
    case refreshed
    /// The session was gone and the stack logged out; `expired` tells whether the token had
    /// expired by the environment's clock before the refresh.
    case ended(expired: Bool)
    /// Nobody was logged in; nothing was asked.
    case notLoggedIn
    /// The session changed while the refresh ran; its result was dropped.
    case superseded
}
