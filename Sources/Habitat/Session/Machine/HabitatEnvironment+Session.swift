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
        applySession()
    }

    /// Signs the current user out, in place; ``SessionDependent`` services are told nobody is
    /// signed in.
    @inlinable
    public mutating func clearSession() {
        session = nil
        applySession()
    }

    /// Replaces the signed-in user, in place, keeping the token and the auth state.
    /// - Parameter user: The new user data.
    /// - Throws: ``SessionError/notLoggedIn(operation:)`` when nobody is logged in; the
    ///   environment is unchanged then.
    @inlinable
    public mutating func setCurrentUser(_ user: App.User) throws(SessionError) {
        guard session != nil else { throw .notLoggedIn(operation: "setCurrentUser") }
        session?.user = user
        applySession()
    }

    /// Returns a copy with `user` signed in; see ``setSession(user:token:)``.
    /// - Parameters:
    ///   - user: The user who signed in.
    ///   - token: The user's credential.
    /// - Returns: A copy with the new session.
    @inlinable
    public func settingSession(user: App.User, token: AuthToken) -> Self {
        var copy = self
        copy.setSession(user: user, token: token)
        return copy
    }

    /// Returns a copy with nobody signed in; see ``clearSession()``.
    /// - Returns: A copy without a session.
    @inlinable
    public func clearingSession() -> Self {
        var copy = self
        copy.clearSession()
        return copy
    }

    /// Returns a copy whose signed-in user is `user`; see ``setCurrentUser(_:)``.
    /// - Parameter user: The updated user.
    /// - Returns: A copy with the new user.
    /// - Throws: ``SessionError/notLoggedIn(operation:)`` when nobody is logged in.
    @inlinable
    public func settingCurrentUser(_ user: App.User) throws(SessionError) -> Self {
        var copy = self
        try copy.setCurrentUser(user)
        return copy
    }
}

extension HabitatEnvironment {
    /// Tells the services about the session now (see ``EnvironmentSchema/services(_:for:)``).
    @inlinable
    mutating func applySession() {
        services = App.services(services, for: session)
    }
}
