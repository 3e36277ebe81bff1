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
/// let live = HabitatEnvironment<AppWorld>(services: .live, config: .default)
/// let test = live
///     .with(\.services, .mock)
///     .with(\.locale, Locale(identifier: "en_US_POSIX"))
///     .with(\.now, { Date(timeIntervalSince1970: 0) })
/// ```
///
/// An app usually keeps its environments in an ``EnvironmentStack`` and reads
/// `appEnvironment.current`.
public struct HabitatEnvironment<App: EnvironmentSchema>: Sendable {
    /// The app's dependencies: API client, analytics, storage.
    public var services: App.Services
    /// The signed-in session, or `nil` when logged out.
    public var session: UserSession<App.User>?
    /// The accounts signed in besides the active one (``session``): each keeps its token and
    /// state, and none is what readers or services see until
    /// ``EnvironmentStack/switchAccount(to:fileID:line:)`` makes it the active one. Empty in an
    /// app with one account. See ``accounts``.
    public var otherAccounts: [UserSession<App.User>] = []
    /// The app's configuration.
    public var config: App.Config
    /// The clock, calendar, locale, time zone and UUID generator, in one shared object.
    ///
    /// NB: copying an environment (every push, scope and write does) retains this one object
    /// for the five values, and an app changes them rarely; setting one of them makes a new
    /// object.
    @usableFromInline var system: Shared<SystemValues>

    /// Returns the current date. Replace it to freeze or move time in tests.
    @inlinable
    public var now: @Sendable () -> Date {
        get { system.value.now }
        set { system = system.with { $0.now = newValue } }
    }
    /// The calendar for date arithmetic.
    @inlinable
    public var calendar: Calendar {
        get { system.value.calendar }
        set { system = system.with { $0.calendar = newValue } }
    }
    /// The locale for formatting and language.
    @inlinable
    public var locale: Locale {
        get { system.value.locale }
        set { system = system.with { $0.locale = newValue } }
    }
    /// The time zone for displaying dates.
    @inlinable
    public var timeZone: TimeZone {
        get { system.value.timeZone }
        set { system = system.with { $0.timeZone = newValue } }
    }
    /// Returns a new UUID. Replace it to make identifiers predictable in tests.
    @inlinable
    public var uuid: @Sendable () -> UUID {
        get { system.value.uuid }
        set { system = system.with { $0.uuid = newValue } }
    }

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
        self.system = Shared(SystemValues(now: now, calendar: calendar, locale: locale, timeZone: timeZone, uuid: uuid))
    }

    /// The signed-in user, or `nil` when logged out.
    public var currentUser: App.User? { session?.user }

    /// Whether a user is signed in.
    public var isLoggedIn: Bool { session != nil }
}

/// The values of an environment that come from the system rather than the app.
@usableFromInline
struct SystemValues: Sendable {
    @usableFromInline var now: @Sendable () -> Date
    @usableFromInline var calendar: Calendar
    @usableFromInline var locale: Locale
    @usableFromInline var timeZone: TimeZone
    @usableFromInline var uuid: @Sendable () -> UUID
}

/// An immutable value shared by reference: copies retain one object.
@usableFromInline
final class Shared<Value: Sendable>: Sendable {
    @usableFromInline let value: Value

    @inlinable
    init(_ value: Value) { self.value = value }

    /// A new object holding a copy of the value, changed by `change`.
    @inlinable
    func with(_ change: (inout Value) -> Void) -> Shared<Value> {
        var value = value
        change(&value)
        return Shared(value)
    }
}

extension HabitatEnvironment where App.Config: DefaultConfig {
    /// Creates an environment with the default configuration (`App.Config()`): what an app that
    /// keeps no configuration, or one with a ``DefaultConfig``, writes.
    ///
    /// ```swift
    /// let live = HabitatEnvironment<AppWorld>(services: .live)
    /// ```
    /// - Parameters:
    ///   - services: The app's dependencies.
    ///   - session: The signed-in session; `nil` (the default) means logged out.
    ///   - now: Returns the current date.
    ///   - calendar: The calendar for date arithmetic.
    ///   - locale: The locale for formatting.
    ///   - timeZone: The time zone for displaying dates.
    ///   - uuid: Returns a new UUID.
    public init(
        services: App.Services,
        session: UserSession<App.User>? = nil,
        now: @escaping @Sendable () -> Date = { Date() },
        calendar: Calendar = .autoupdatingCurrent,
        locale: Locale = .autoupdatingCurrent,
        timeZone: TimeZone = .autoupdatingCurrent,
        uuid: @escaping @Sendable () -> UUID = { UUID() }
    ) {
        self.init(
            services: services, config: App.Config(), session: session,
            now: now, calendar: calendar, locale: locale, timeZone: timeZone, uuid: uuid
        )
    }
}
