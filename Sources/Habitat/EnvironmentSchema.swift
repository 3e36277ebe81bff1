public import Foundation

/// Names an app's own types once, so every Habitat type can be generic over one parameter.
///
/// Declare a caseless enum that conforms, and use it as the generic argument of
/// ``HabitatEnvironment`` and ``EnvironmentStack``. An app that only injects dependencies names
/// its services and nothing else:
///
/// ```swift
/// enum AppSchema: EnvironmentSchema {
///     typealias Services = AppServices   // API client, analytics, storage...
/// }
/// ```
///
/// An app that signs users in names its user too, and its configuration if it keeps one; an
/// extension can add them later (an associated type's witness may be declared there):
///
/// ```swift
/// extension AppSchema {
///     typealias User = Account          // the signed-in user
///     typealias Config = RemoteConfig   // server configuration and feature flags
/// }
/// ```
///
/// `User` defaults to ``NoUser`` (nobody ever signs in) and `Config` to ``NoConfig``. When `Config`
/// conforms to ``DefaultConfig``, environments can be made without naming one. Don't name the
/// schema after your module (`enum MyApp` in module `MyApp`): `MyApp.Account` would then name a
/// member of the enum, not the module's type.
///
/// NB: one schema parameter instead of three (`HabitatEnvironment<Services, User, Config>`) keeps
/// signatures short and lets an app add a type later without touching every declaration.
public protocol EnvironmentSchema: SendableMetatype {
    /// The app's dependencies: API client, analytics, storage. Often a struct of closures.
    associatedtype Services: Sendable
    /// The signed-in user. `Codable` so a session can be saved and restored. ``NoUser`` by
    /// default: an app without sessions.
    associatedtype User: Codable & Sendable = NoUser
    /// Server or app configuration: feature flags, endpoints, limits. ``NoConfig`` by default.
    associatedtype Config: Codable & Sendable = NoConfig


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

    /// The name that tells one signed-in account from another (see HabitatPersistence's
    /// Persistence and sessions article, "Several accounts").
    ///
    /// You rarely implement this: when `User` is `Identifiable`, the default is its `id`
    /// (`"\(user.id)"`); otherwise every user is the same account, `""`, so signing one in
    /// replaces the other. The name keys the account's token item in the secret store and its
    /// namespace of per-account data, so keep it stable and free of personal data.
    ///
    /// The one rule by which a switch, a sign-out, a refresh and the store find an account: a
    /// name means the account whose `accountID(of:)` is that name, exactly. `"7"` names the
    /// account whose `id` is `7`; `"007"` and `"+7"` name none.
    /// - Parameter user: A signed-in user.
    /// - Returns: The account's name.
    static func accountID(of user: User) -> String
}

extension EnvironmentSchema {
    /// `""`: a user that isn't `Identifiable` is one account.
    @inlinable
    public static func accountID(of user: User) -> String { "" }

    /// Whether `user` is the account named `name`: `accountID(of: user) == name`, exactly. The
    /// one rule by which a switch, a sign-out, a refresh and the store find an account: `"7"`
    /// names the account whose `id` is `7`; `"007"` and `"+7"` name none.
    @inlinable
    package static func isAccount(_ user: User, named name: String) -> Bool { accountID(of: user) == name }
}

extension EnvironmentSchema where User: Identifiable {
    /// The user's `id`, as text.
    @inlinable
    public static func accountID(of user: User) -> String { "\(user.id)" }
}

extension EnvironmentSchema where User: Identifiable, User.ID: LosslessStringConvertible {
    /// The user's `id` (a `String`, an `Int`...), as its `description`.
    ///
    /// NB: not string interpolation, which in a generic context asks the type at run time how
    /// to print itself: a switch between two accounts measured 17x a login that way.
    @inlinable
    public static func accountID(of user: User) -> String { user.id.description }
}

extension EnvironmentSchema where User: Identifiable, User.ID == UUID {
    /// The user's `id`, as its `uuidString`.
    @inlinable
    public static func accountID(of user: User) -> String { user.id.uuidString }
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

/// A configuration with a default: `init()` makes the configuration an environment starts with, so
/// `HabitatEnvironment(services:)` and the test and preview environments need no `config:`.
///
/// A struct whose properties all have default values gets its `init()` for free:
///
/// ```swift
/// struct RemoteConfig: Codable, Sendable, DefaultConfig {
///     var timeout = 30
/// }
/// ```
public protocol DefaultConfig: Codable, Sendable {
    /// The default configuration.
    init()
}

/// The user of an app that signs nobody in: the default of ``EnvironmentSchema/User``.
///
/// It has no values, so a session of it can't be made: `login` can't be called, and a saved
/// session can't decode into it (decoding throws `DecodingError.typeMismatch`).
///
/// NB: not `Never`, whose `Codable` conformance needs iOS 17 / macOS 14 / tvOS 17 / watchOS 10:
/// as the default it broke every services-only schema at the iOS 16 / macOS 13 Habitat supports.
public enum NoUser: Codable, Sendable, Hashable {
    /// Always throws: there is no user to decode.
    /// - Parameter decoder: The decoder; nothing is read from it.
    /// - Throws: `DecodingError.typeMismatch`.
    public init(from decoder: any Decoder) throws {
        throw DecodingError.typeMismatch(
            NoUser.self,
            DecodingError.Context(codingPath: decoder.codingPath, debugDescription: "this app's schema signs nobody in (User is NoUser)")
        )
    }

    /// Never called: there is no value to encode.
    /// - Parameter encoder: The encoder.
    public func encode(to encoder: any Encoder) throws {
        switch self {}
    }
}

/// The configuration of an app that keeps none: the default of ``EnvironmentSchema/Config``.
public struct NoConfig: DefaultConfig, Hashable {
    /// Creates the empty configuration.
    public init() {}
}

/// The schema of an app that injects services and nothing else: no user, no configuration.
///
/// An app starts here without declaring a schema of its own:
/// ``EnvironmentStack/init(live:test:fileID:line:)`` makes the stack from the services alone, and
/// the stack's type is `EnvironmentStack<ServicesOnly<AppServices>>`. When the app adds a
/// signed-in user or a configuration, it declares its own schema and names it instead.
public enum ServicesOnly<Services: Sendable>: EnvironmentSchema {}

extension EnvironmentStack {
    /// Creates the stack of an app that injects `live` services and nothing else, built only
    /// where they are used, as ``init(live:preview:test:fileID:line:)`` builds a live environment.
    ///
    /// ```swift
    /// let appEnvironment = EnvironmentStack(live: AppServices.live)
    /// ```
    ///
    /// The schema is ``ServicesOnly``: no user, no configuration. An app that adds them declares an
    /// ``EnvironmentSchema`` and makes its stack with ``init(live:preview:test:fileID:line:)``;
    /// tests written with the `services:` trait keep working.
    /// - Parameters:
    ///   - live: Builds the live services.
    ///   - test: Builds the services a test run's reads get when a test installed no environment
    ///     (services whose endpoints fail, say), never the live ones; `nil` (the default) names
    ///     none. See ``init(live:preview:test:fileID:line:)``.
    ///   - fileID: The calling file, recorded as the base's ``FrameOrigin``.
    ///   - line: The calling line, recorded with it.
    public convenience init<Services: Sendable>(
        live: @autoclosure @escaping @Sendable () -> Services,
        test: (@Sendable () -> Services)? = nil,
        fileID: StaticString = #fileID,
        line: UInt = #line
    ) where App == ServicesOnly<Services> {
        let test = test.map { test in { @Sendable in HabitatEnvironment<App>(services: test()) } }
        self.init(live: HabitatEnvironment(services: live()), test: test, fileID: fileID, line: line)
    }
}
