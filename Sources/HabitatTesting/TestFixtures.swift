public import Foundation
public import Habitat

/// The values of a predictable environment for tests: a fixed date, counting UUIDs, the POSIX
/// locale, UTC and the Gregorian calendar.
public enum TestFixtures {
    /// The date the test environment stands still at: 2001-01-01 00:00:00 UTC.
    public static let date = Date(timeIntervalSinceReferenceDate: 0)
    /// `en_US_POSIX`: formatting that never depends on the machine's settings.
    public static let locale = Locale(identifier: "en_US_POSIX")
    /// UTC.
    public static let timeZone = TimeZone(secondsFromGMT: 0) ?? .gmt
    /// A Gregorian calendar in UTC.
    public static var calendar: Calendar {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        calendar.locale = locale
        return calendar
    }

    /// A UUID generator that counts: `00000000-0000-0000-0000-000000000000`, then `...0001`, ...
    ///
    /// Each call of this function starts a new count, so every test gets the same sequence.
    /// - Returns: The generator.
    public static func incrementingUUIDs() -> @Sendable () -> UUID {
        let counter = Counter()
        return {
            let value = counter.next()
            return UUID(uuidString: String(format: "00000000-0000-0000-0000-%012llX", value)) ?? UUID()
        }
    }

    private final class Counter: Sendable {
        private let value = LockedBox<UInt64>(0)
        func next() -> UInt64 {
            value.withLock { value in
                defer { value += 1 }
                return value
            }
        }
    }
}

extension HabitatEnvironment {
    /// An environment for tests: the given services and configuration in the predictable
    /// ``TestFixtures``, logged out.
    ///
    /// ```swift
    /// let env = HabitatEnvironment<AppSchema>.test(services: .unimplemented, config: .default)
    /// env.now()      // 2001-01-01 00:00:00 +0000
    /// env.uuid()     // 00000000-0000-0000-0000-000000000000
    /// ```
    /// - Parameters:
    ///   - services: Usually services whose endpoints are unimplemented.
    ///   - config: The configuration.
    ///   - now: The fixed date; ``TestFixtures/date`` by default.
    /// - Returns: The test environment.
    public static func test(services: App.Services, config: App.Config, now: Date = TestFixtures.date) -> Self {
        HabitatEnvironment(services: services, config: config).usingTestFixtures(now: now)
    }

    /// This environment with the ``TestFixtures``'s clock, UUIDs, calendar, locale and time zone.
    /// - Parameter now: The fixed date; ``TestFixtures/date`` by default.
    /// - Returns: The changed copy.
    public func usingTestFixtures(now: Date = TestFixtures.date) -> Self {
        var copy = self
        copy.now = { now }
        copy.uuid = TestFixtures.incrementingUUIDs()
        copy.calendar = TestFixtures.calendar
        copy.locale = TestFixtures.locale
        copy.timeZone = TestFixtures.timeZone
        return copy
    }
}

extension HabitatEnvironment where App.Config: DefaultConfig {
    /// An environment for tests with the default configuration: the given services in the
    /// predictable ``TestFixtures``, logged out.
    ///
    /// ```swift
    /// @Test(.environment(appEnvironment, .test(services: AppServices(api: .unimplemented))))
    /// ```
    /// - Parameters:
    ///   - services: Usually services whose endpoints are unimplemented.
    ///   - now: The fixed date; ``TestFixtures/date`` by default.
    /// - Returns: The test environment.
    public static func test(services: App.Services, now: Date = TestFixtures.date) -> Self {
        test(services: services, config: App.Config(), now: now)
    }
}
