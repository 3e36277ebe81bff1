extension Environment {
    /// Returns this environment with `user` signed in.
    ///
    /// The new session is ``AuthState/authenticated``, and ``SessionDependent`` services receive
    /// the token. Logging in while someone else is logged in switches to the new user.
    ///
    /// - Parameters:
    ///   - user: The user who signed in.
    ///   - token: The user's credential.
    /// - Returns: A copy with the new session.
    @inlinable
    public func loggingIn(user: App.User, token: AccessToken) -> Self {
        var copy = self
        copy.session = Session(user: user, token: token, state: .authenticated)
        copy.applySessionToken(token)
        return copy
    }

    /// Returns this environment with nobody signed in.
    ///
    /// ``SessionDependent`` services are told the token is gone.
    /// - Returns: A copy without a session.
    @inlinable
    public func loggingOut() -> Self {
        var copy = self
        copy.session = nil
        copy.applySessionToken(nil)
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
        guard var session else { throw .notLoggedIn(operation: "updateCurrentUser") }
        session.user = user
        var copy = self
        copy.session = session
        return copy
    }
}
