// The session as a field of a value: an environment with someone signed in, or nobody.
//
// NB: this edits a value and records nothing; the stack's `login(user:token:)` is the transition
// (a frame, a change, autosave). The names differ on purpose: `setSession` never reads like
// `login`. Signing out of a value, or changing its user, is the `session` property's setter:
// `environment.session = nil`, `environment.session?.user = user`.
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
}

extension HabitatEnvironment {
    /// Tells the services about the session now (see ``EnvironmentSchema/services(_:for:)``).
    @inlinable
    mutating func applySession() {
        services = App.services(services, for: session)
    }
}
