// The session as a field of a value: an environment with someone signed in, or nobody.
//
// NB: these edit a value and record nothing; the stack's `login(user:token:)`, `logout()` and
// `updateCurrentUser(_:)` are the transitions (a frame, a change, autosave). The names differ
// on purpose: `setSession` never reads like `login`.
extension HabitatEnvironment {
    /// Signs `user` in, in place: the session becomes `user` with `token`,
    /// ``AuthState/authenticated``, and ``SessionDependent`` services receive it.
    ///
    /// What a server's middleware uses in a scope's change closure, so the request's environment
    /// is made with one copy of the current one:
    ///
    /// ```swift
    /// try await appEnvironment.withEnvironment({ $0.setSession(user: member, token: token) }) {
    ///     try await handle(request)
    /// }
    /// ```
    /// - Parameters:
    ///   - user: The user who signed in.
    ///   - token: The user's credential.
    @inlinable
    public mutating func setSession(user: App.User, token: AuthToken) {
        session = UserSession(user: user, token: token, state: .authenticated)
    }

    /// Signs the current user out, in place; ``SessionDependent`` services are told nobody is
    /// signed in.
    @inlinable
    public mutating func clearSession() {
        session = nil
    }

    /// Replaces the signed-in user, in place, keeping the token and the auth state.
    /// - Parameter user: The new user data.
    /// - Throws: ``SessionError/notLoggedIn(operation:)`` when nobody is logged in; the
    ///   environment is unchanged then.
    @inlinable
    public mutating func setCurrentUser(_ user: App.User) throws(SessionError) {
        guard var current = activeSession else { throw .notLoggedIn(operation: "setCurrentUser") }
        current.user = user
        session = current
    }
}

extension HabitatEnvironment {
    /// Tells the services about the session now (see ``EnvironmentSchema/services(_:for:)``).
    @inlinable
    mutating func applySession() {
        services = App.services(services, for: session)
    }
}
