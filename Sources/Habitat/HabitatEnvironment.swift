public import Foundation

/// The whole environment an app runs in, as one value.
///
/// An environment carries the app's services, the signed-in ``UserSession`` (or `nil` when nobody
/// is logged in), the app's configuration, and the values that make code hard to test when read
/// from the system directly: the current date, the calendar, locale and time zone, and a UUID
/// generator. Because it is a value, a test builds the environment it needs with a few updaters and
/// nothing leaks out of it:
///
/// ```swift
/// let live = HabitatEnvironment<AppSchema>(services: .live, config: .default)
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
    /// The active account's session; see ``session``.
    @usableFromInline package var activeSession: UserSession<App.User>?
    /// The other accounts' sessions; see ``otherAccounts``. Changed only through
    /// ``SignedInAccounts``, which keeps one session per account.
    @usableFromInline package var otherSessions: [UserSession<App.User>] = []
    /// The app's configuration.
    public var config: App.Config
    /// The clock, calendar, locale, time zone and UUID generator, in shared objects.
    ///
    /// NB: copying an environment (every push, scope and write does) retains this one object
    /// for the five values, and an app changes them rarely; setting one of them makes a new
    /// object.
    @usableFromInline var system: SystemValues

    /// Returns the current date. Replace it to freeze or move time in tests.
    @inlinable
    public var now: @Sendable () -> Date {
        get { system.now }
        set { system = system.with(now: newValue) }
    }
    /// The calendar for date arithmetic.
    @inlinable
    public var calendar: Calendar {
        get { system.region.calendar }
        set { system = system.with(calendar: newValue) }
    }
    /// The locale for formatting and language.
    @inlinable
    public var locale: Locale {
        get { system.region.locale }
        set { system = system.with(locale: newValue) }
    }
    /// The time zone for displaying dates.
    @inlinable
    public var timeZone: TimeZone {
        get { system.region.timeZone }
        set { system = system.with(timeZone: newValue) }
    }
    /// Returns a new UUID. Replace it to make identifiers predictable in tests.
    @inlinable
    public var uuid: @Sendable () -> UUID {
        get { system.uuid }
        set { system = system.with(uuid: newValue) }
    }

    /// Creates an environment.
    ///
    /// Every value but the services and the configuration has a live default: the system clock,
    /// the user's calendar, locale and time zone, and random UUIDs.
    ///
    /// - Parameters:
    ///   - services: The app's dependencies.
    ///   - config: The app's configuration.
    ///   - session: The signed-in session; `nil` (the default) means logged out. The services
    ///   are told of a session (``SessionDependent``) exactly as setting ``session`` tells
    ///   them; without one, they are kept as given.
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
        self.activeSession = session
        self.system = SystemValues(now: now, uuid: uuid, region: Region(calendar: calendar, locale: locale, timeZone: timeZone))
        if session != nil { applySession() }
    }

    /// The signed-in session, or `nil` when logged out. Setting it tells ``SessionDependent``
    /// services and signs out the account's other session in ``otherAccounts``, if it had one.
    ///
    /// This edits a value and records nothing; the stack's
    /// ``EnvironmentStack/login(user:token:fileID:line:)`` is the transition (a frame, a change,
    /// autosave). What a server's middleware sets in a scope's change closure, so the request's
    /// environment is made with one copy of the current one:
    ///
    /// ```swift
    /// try await appEnvironment.withEnvironment({ $0.session = UserSession(user: member, token:
    /// token) }) {
    ///     try await handle(request)
    /// }
    /// ```
    ///
    /// Signing out of a value, or changing its user: `environment.session = nil`,
    /// `environment.session?.user = user`.
    @inlinable
    public var session: UserSession<App.User>? {
        get { activeSession }
        set {
            setActive(newValue)
            applySession()
        }
    }

    /// The accounts signed in besides the active one (``session``): each keeps its token and
    /// state, and none is what readers or services see until
    /// ``EnvironmentStack/switchAccount(to:fileID:line:)`` makes it the active one. Empty in an
    /// app with one account. See ``accounts``. One session per account
    /// (``EnvironmentSchema/accountID(of:)``): setting them keeps the first of each, and none of
    /// the active account's.
    @inlinable
    public var otherAccounts: [UserSession<App.User>] {
        get { otherSessions }
        set { setOthers(newValue) }
    }

    /// The signed-in user, or `nil` when logged out.
    public var currentUser: App.User? { session?.user }
}

extension HabitatEnvironment {
    /// Every stored property, each given: ``fieldwiseCopy`` goes through it, so a new stored
    /// property must be added here (`EnvironmentTests.everyCopyKeepsEveryField` fails otherwise).
    @inlinable
    init(services: App.Services, activeSession: UserSession<App.User>?, otherSessions: [UserSession<App.User>], config: App.Config, system: SystemValues) {
        self.services = services
        self.activeSession = activeSession
        self.otherSessions = otherSessions
        self.config = config
        self.system = system
    }

    /// A copy, made field by field.
    ///
    /// NB: a plain copy (`var copy = environment`) goes through the type's value witness, which
    /// for a generic struct looks each field's type up at run time (about 320 instructions):
    /// the compiler copies that way a struct holding an enum whose payload is over four words,
    /// as `session` is. Field by field, every copy is specialised: a few retains.
    @inlinable
    var fieldwiseCopy: Self {
        Self(services: services, activeSession: activeSession, otherSessions: otherSessions, config: config, system: system)
    }
}

/// The values of an environment that come from the system rather than the app, shared by
/// reference: an environment's copies retain one object, and setting a value makes a new one.
///
/// NB: the region's three values are shared once more, apart from the clock and the UUIDs: a
/// server sets the clock per request, and copying and later freeing a calendar, a locale and a
/// time zone (each through Foundation's value witnesses) cost each request ~110 instructions.
/// Classes of their own, not a generic box, whose `deinit` destroys its value through run-time
/// type metadata (~15 instructions more per request).
@usableFromInline
final class SystemValues: Sendable {
    @usableFromInline let now: @Sendable () -> Date
    @usableFromInline let uuid: @Sendable () -> UUID
    @usableFromInline let region: Region

    @inlinable
    init(now: @escaping @Sendable () -> Date, uuid: @escaping @Sendable () -> UUID, region: Region) {
        self.now = now
        self.uuid = uuid
        self.region = region
    }
    /// A new object with the values given changed and the others kept; the region is shared
    /// unless one of its values changes.
    @inlinable
    func with(
        now: (@Sendable () -> Date)? = nil,
        uuid: (@Sendable () -> UUID)? = nil,
        calendar: Calendar? = nil,
        locale: Locale? = nil,
        timeZone: TimeZone? = nil
    ) -> SystemValues {
        var region = self.region
        if calendar != nil || locale != nil || timeZone != nil {
            region = Region(calendar: calendar ?? region.calendar, locale: locale ?? region.locale, timeZone: timeZone ?? region.timeZone)
        }
        return SystemValues(now: now ?? self.now, uuid: uuid ?? self.uuid, region: region)
    }
}

/// The calendar, locale and time zone of an environment.
@usableFromInline
final class Region: Sendable {
    @usableFromInline let calendar: Calendar
    @usableFromInline let locale: Locale
    @usableFromInline let timeZone: TimeZone

    @inlinable
    init(calendar: Calendar, locale: Locale, timeZone: TimeZone) {
        self.calendar = calendar
        self.locale = locale
        self.timeZone = timeZone
    }
}

extension HabitatEnvironment where App.Config: DefaultConfig {
    /// Creates an environment with the default configuration (`App.Config()`): what an app that
    /// keeps no configuration, or one with a ``DefaultConfig``, writes.
    ///
    /// ```swift
    /// let live = HabitatEnvironment<AppSchema>(services: .live)
    /// ```
    /// - Parameters:
    ///   - services: The app's dependencies.
    ///   - session: The signed-in session; `nil` (the default) means logged out. The services
    ///   are told of a session (``SessionDependent``) exactly as setting ``session`` tells
    ///   them; without one, they are kept as given.
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
