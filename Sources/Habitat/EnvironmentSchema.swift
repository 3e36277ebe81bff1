/// Names an app's own types once, so every Habitat type can be generic over one parameter.
///
/// Declare a caseless enum that conforms, and use it as the generic argument of
/// ``HabitatEnvironment`` and ``EnvironmentStack``:
///
/// ```swift
/// enum MyApp: EnvironmentSchema {
///     typealias Services = AppServices   // API client, analytics, storage...
///     typealias User = Account           // the signed-in user
///     typealias Config = RemoteConfig    // server configuration and feature flags
/// }
///
/// let AppEnvironment = EnvironmentStack<MyApp>(HabitatEnvironment(services: .live, config: .default))
/// ```
///
/// NB: one schema parameter instead of three (`HabitatEnvironment<Services, User, Config>`) keeps
/// signatures short and lets an app add a type later without touching every declaration.
public protocol EnvironmentSchema: SendableMetatype {
    /// The app's dependencies: API client, analytics, storage. Often a struct of closures.
    associatedtype Services: Sendable
    /// The signed-in user. `Codable` so a session can be saved and restored.
    associatedtype User: Codable & Sendable
    /// Server or app configuration: feature flags, endpoints, limits.
    associatedtype Config: Codable & Sendable

    /// Returns `services` updated for a new or changed session, or for none after logout.
    ///
    /// You rarely implement this: when `Services` conforms to ``SessionDependent``, the default
    /// calls its ``SessionDependent/sessionChanged(to:)``; otherwise it returns `services`
    /// unchanged. Implement it to update services that can't conform themselves.
    ///
    /// NB: a requirement with defaults rather than a run-time `as? SessionDependent` cast, so
    /// `login` and `logout` dispatch statically: the cast measured slower than the rest of the
    /// transition.
    ///
    /// - Parameters:
    ///   - services: The services of the environment whose session changed.
    ///   - session: The session now, or `nil` after logout.
    /// - Returns: The updated services.
    static func services(_ services: Services, for session: UserSession<User>?) -> Services
}

extension EnvironmentSchema {
    /// Returns `services` unchanged: services that don't depend on the session.
    @inlinable
    public static func services(_ services: Services, for session: UserSession<User>?) -> Services {
        services
    }
}

extension EnvironmentSchema where Services: SessionDependent, Services.User == User {
    /// Hands `session` to the services through ``SessionDependent/sessionChanged(to:)``.
    @inlinable
    public static func services(_ services: Services, for session: UserSession<User>?) -> Services {
        var updated = services
        updated.sessionChanged(to: session)
        return updated
    }
}
