public import Foundation

/// The whole world an app runs in, as one value.
///
/// An environment carries the app's services, the signed-in ``UserSession`` (or `nil` when nobody is
/// logged in), the app's configuration, and the values that make code hard to test when read
/// from the system directly: the current date, the calendar, locale and time zone, and a UUID
/// generator. Because it is a value, a test builds the world it needs with a few updaters and
/// nothing leaks out of it:
///
/// ```swift
/// let live = HabitatEnvironment<MyApp>(services: .live, config: .default)
/// let test = live
///     .with(\.services, .mock)
///     .with(\.locale, Locale(identifier: "en_US_POSIX"))
///     .with(\.now, { Date(timeIntervalSince1970: 0) })
/// ```
///
/// An app usually keeps its environments in an ``EnvironmentStack`` and reads
/// `AppEnvironment.current`.
public struct HabitatEnvironment<App: EnvironmentSchema>: Sendable {
    /// The app's dependencies: API client, analytics, storage.
    public var services: App.Services
    /// The signed-in session, or `nil` when logged out.
    public var session: UserSession<App.User>?
    /// The app's configuration.
    public var config: App.Config
    /// Returns the current date. Replace it to freeze or move time in tests.
    public var now: @Sendable () -> Date
    /// The calendar for date arithmetic.
    public var calendar: Calendar
    /// The locale for formatting and language.
    public var locale: Locale
    /// The time zone for displaying dates.
    public var timeZone: TimeZone
    /// Returns a new UUID. Replace it to make identifiers predictable in tests.
    public var uuid: @Sendable () -> UUID

    /// Creates an environment.
    ///
    /// Every value but the services and the configuration has a live default: the system clock,
    /// the user's calendar, locale and time zone, and random UUIDs.
    ///
    /// - Parameters:
    ///   - services: The app's dependencies.
    ///   - config: The app's configuration.
    ///   - session: The signed-in session; `nil` (the default) means logged out.
    ///   - now: Returns the current date.
    ///   - calendar: The calendar for date arithmetic.
    ///   - locale: The locale for formatting.
    ///   - timeZone: The time zone for displaying dates.
    ///   - uuid: Returns a new UUID.
    public init(
        services: App.Services,
        config: App.Config,
        session: UserSession<App.User>? = nil,
        now: @escaping @Sendable () -> Date = { Date() },
        calendar: Calendar = .autoupdatingCurrent,
        locale: Locale = .autoupdatingCurrent,
        timeZone: TimeZone = .autoupdatingCurrent,
        uuid: @escaping @Sendable () -> UUID = { UUID() }
    ) {
        self.services = services
        self.config = config
        self.session = session
        self.now = now
        self.calendar = calendar
        self.locale = locale
        self.timeZone = timeZone
        self.uuid = uuid
    }

    /// The signed-in user, or `nil` when logged out.
    public var currentUser: App.User? { session?.user }

    /// Whether a user is signed in.
    public var isLoggedIn: Bool { session != nil }
}
