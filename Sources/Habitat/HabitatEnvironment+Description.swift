import Foundation

extension HabitatEnvironment: CustomStringConvertible, CustomReflectable {
    /// One line per field, readable in a log or a debugger: the services, the session (its
    /// token redacted), the configuration, the current date, and the identifiers of the
    /// calendar, locale and time zone.
    public var description: String {
        let session = session.map { "\($0.state) as \($0.user), token \($0.token)" } ?? "logged out"
        return """
            HabitatEnvironment<\(App.self)>(
              services: \(services)
              session: \(session)
              config: \(config)
              now: \(now())
              calendar: \(calendar.identifier), locale: \(locale.identifier), timeZone: \(timeZone.identifier)
            )
            """
    }

    /// The fields as `dump` and debuggers show them, with Foundation's calendar, locale and time
    /// zone shown by identifier instead of their internals, and the token redacted.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "services": services,
                "session": session as Any,
                "config": config,
                "now": now(),
                "calendar": calendar.identifier,
                "locale": locale.identifier,
                "timeZone": timeZone.identifier,
            ],
            displayStyle: .struct
        )
    }
}
