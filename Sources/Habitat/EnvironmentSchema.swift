/// Names an app's own types once, so every Habitat type can be generic over one parameter.
///
/// Declare a caseless enum that conforms, and use it as the generic argument of
/// ``HabitatEnvironment`` and ``EnvironmentStack``. An app that only injects dependencies names
/// its services and nothing else:
///
/// ```swift
/// enum AppWorld: EnvironmentSchema {
///     typealias Services = AppServices   // API client, analytics, storage...
/// }
/// ```
///
/// An app that signs users in names its user too, and its configuration if it keeps one; an
/// extension can add them later (an associated type's witness may be declared there):
///
/// ```swift
/// extension AppWorld {
///     typealias User = Account                    // the signed-in user
///     typealias Config = RemoteConfig             // server configuration and feature flags
///     static var defaultConfig: RemoteConfig { RemoteConfig() }
/// }
/// ```
///
/// `User` defaults to `Never` (nobody ever signs in) and `Config` to ``NoConfig``. Don't name the
/// schema after your module (`enum MyApp` in module `MyApp`): `MyApp.Account` would then name a
/// member of the enum, not the module's type.
///
/// NB: one schema parameter instead of three (`HabitatEnvironment<Services, User, Config>`) keeps
/// signatures short and lets an app add a type later without touching every declaration.
public protocol EnvironmentSchema: SendableMetatype {
    /// The app's dependencies: API client, analytics, storage. Often a struct of closures.
    associatedtype Services: Sendable
    /// The signed-in user. `Codable` so a session can be saved and restored. `Never` by
    /// default: an app without sessions.
    associatedtype User: Codable & Sendable = Never
    /// Server or app configuration: feature flags, endpoints, limits. ``NoConfig`` by default.
    associatedtype Config: Codable & Sendable = NoConfig

    /// The configuration an environment starts with when none is given, as in
    /// `HabitatEnvironment(services: .live)`.
    ///
    /// ``NoConfig()`` when `Config` is ``NoConfig``. A schema with a configuration of its own
    /// declares it (`static var defaultConfig: RemoteConfig { RemoteConfig() }`), or passes
    /// `config:` wherever it makes an environment; without either, making one without a
    /// configuration stops the program with a message that says so.
    static var defaultConfig: Config { get }

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
    /// Stops the program: the schema has a configuration of its own but declares no default.
    public static var defaultConfig: Config {
        fatalError(
            "\(Self.self).Config is \(Config.self), and \(Self.self) declares no defaultConfig: pass `config:` "
                + "or declare `static var defaultConfig: \(Config.self) { ... }` in \(Self.self)"
        )
    }

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

extension EnvironmentSchema where Config == NoConfig {
    /// ``NoConfig()``: the default of a schema without a configuration.
    public static var defaultConfig: NoConfig { NoConfig() }
}

/// The configuration of an app that keeps none: the default of ``EnvironmentSchema/Config``.
public struct NoConfig: Codable, Sendable, Hashable {
    /// Creates the empty configuration.
    public init() {}
}
