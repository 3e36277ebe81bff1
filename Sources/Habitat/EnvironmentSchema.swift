/// Names an app's own types once, so every Habitat type can be generic over one parameter.
///
/// Declare a caseless enum that conforms, and use it as the generic argument of
/// ``Environment`` and ``EnvironmentStack``:
///
/// ```swift
/// enum MyApp: EnvironmentSchema {
///     typealias Services = AppServices   // API client, analytics, storage...
///     typealias User = Account           // the signed-in user
///     typealias Config = RemoteConfig    // server configuration and feature flags
/// }
///
/// let AppEnvironment = EnvironmentStack<MyApp>(Environment(services: .live, config: .default))
/// ```
///
/// NB: one schema parameter instead of three (`Environment<Services, User, Config>`) keeps
/// signatures short and lets an app add a type later without touching every declaration.
public protocol EnvironmentSchema: SendableMetatype {
    /// The app's dependencies: API client, analytics, storage. Often a struct of closures.
    associatedtype Services: Sendable
    /// The signed-in user. `Codable` so a session can be saved and restored.
    associatedtype User: Codable & Sendable
    /// Server or app configuration: feature flags, endpoints, limits.
    associatedtype Config: Codable & Sendable
}
