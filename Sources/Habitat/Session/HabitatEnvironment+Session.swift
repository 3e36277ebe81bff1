extension HabitatEnvironment {
    /// Returns this environment with `user` signed in.
    ///
    /// The new session is ``AuthState/authenticated``, and ``SessionDependent`` services receive
    /// the session. Logging in while someone else is logged in switches to the new user.
    ///
    /// - Parameters:
    ///   - user: The user who signed in.
    ///   - token: The user's credential.
    /// - Returns: A copy with the new session.
    @inlinable
    public func loggingIn(user: App.User, token: AuthToken) -> Self {
        var copy = self
        copy.logIn(user: user, token: token)
        return copy
    }

    /// Returns this environment with nobody signed in.
    ///
    /// ``SessionDependent`` services are told nobody is signed in.
    /// - Returns: A copy without a session.
    @inlinable
    public func loggingOut() -> Self {
        var copy = self
        copy.logOut()
        return copy
    }

    /// Returns this environment with the signed-in user replaced by `user`.
    ///
    /// The token and the auth state are kept.
    /// - Parameter user: The updated user.
    /// - Returns: A copy with the new user.
    /// - Throws: ``SessionError/notLoggedIn(operation:)`` when nobody is logged in.
    @inlinable
    public func updatingCurrentUser(_ user: App.User) throws(SessionError) -> Self {
        var copy = self
        try copy.updateCurrentUser(user)
        return copy
    }

    /// Signs `user` in, in place; see ``loggingIn(user:token:)``.
    ///
    /// What a server's middleware uses in a scope's change closure, so the request's environment
    /// is made with one copy of the current one:
    ///
    /// ```swift
    /// try await AppEnvironment.withEnvironment({ $0.logIn(user: member, token: token) }) {
    ///     try await handle(request)
    /// }
    /// ```
    /// - Parameters:
    ///   - user: The user who signed in.
    ///   - token: The user's credential.
    @inlinable
    public mutating func logIn(user: App.User, token: AuthToken) {
        session = UserSession(user: user, token: token, state: .authenticated)
        applySession()
    }

    /// Signs the current user out, in place; see ``loggingOut()``.
    @inlinable
    public mutating func logOut() {
        session = nil
        applySession()
    }

    /// Replaces the signed-in user, in place; see ``updatingCurrentUser(_:)``.
    /// - Parameter user: The new user data.
    /// - Throws: ``SessionError/notLoggedIn(operation:)`` when nobody is logged in; the
    ///   environment is unchanged then.
    @inlinable
    public mutating func updateCurrentUser(_ user: App.User) throws(SessionError) {
        guard session != nil else { throw .notLoggedIn(operation: "updateCurrentUser") }
        session?.user = user
        applySession()
    }
}

extension HabitatEnvironment {
    /// Tells the services about the session now (see ``EnvironmentSchema/services(_:for:)``).
    @inlinable
    mutating func applySession() {
        services = App.services(services, for: session)
    }
}
