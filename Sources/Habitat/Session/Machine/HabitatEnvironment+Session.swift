extension HabitatEnvironment {
    /// Tells the services about the session now (see ``EnvironmentSchema/services(_:for:)``).
    @inlinable
    mutating func applySession() {
        services = App.services(services, for: session)
    }
}
