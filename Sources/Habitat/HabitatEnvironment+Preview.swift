public import Foundation

extension HabitatEnvironment {
    /// An environment for Xcode previews and demos: the given services, a clock that stands still, and
    /// optionally a fixture user signed in with a token that means nothing to any server.
    ///
    /// Give the stack its preview environment where the app declares it, beside the live one; a
    /// preview then never builds a live SDK. Services that keep data get in-memory stores
    /// (`InMemoryStore`, `InMemorySecretStore`) here, so a preview writes nothing to disk.
    ///
    /// ```swift
    /// let appEnvironment = EnvironmentStack<AppSchema>(
    ///     live: HabitatEnvironment(services: .live),
    ///     preview: .preview(services: .preview, signedInAs: Account(id: 1, name: "Ada"))
    /// )
    /// ```
    /// - Parameters:
    ///   - services: Services that answer from fixtures.
    ///   - config: The configuration.
    ///   - user: The user shown as signed in, or `nil` for a signed-out preview.
    ///   - now: The date the clock stands still at; 2001-01-01 00:00 UTC by default.
    /// - Returns: The preview environment.
    public static func preview(
        services: App.Services,
        config: App.Config,
        signedInAs user: App.User? = nil,
        now: Date = Date(timeIntervalSinceReferenceDate: 0)
    ) -> Self {
        var environment = HabitatEnvironment(services: services, config: config, now: { now })
        if let user { environment.session = UserSession(user: user, token: AuthToken("preview")) }
        return environment
    }
}

extension HabitatEnvironment where App.Config: DefaultConfig {
    /// An environment for Xcode previews with the default configuration; see
    /// ``preview(services:config:signedInAs:now:)``.
    /// - Parameters:
    ///   - services: Services that answer from fixtures.
    ///   - user: The user shown as signed in, or `nil` for a signed-out preview.
    ///   - now: The date the clock stands still at; 2001-01-01 00:00 UTC by default.
    /// - Returns: The preview environment.
    public static func preview(
        services: App.Services,
        signedInAs user: App.User? = nil,
        now: Date = Date(timeIntervalSinceReferenceDate: 0)
    ) -> Self {
        preview(services: services, config: App.Config(), signedInAs: user, now: now)
    }
}
