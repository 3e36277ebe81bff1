import Habitat

/// The app's types, named once.
enum AppSchema: EnvironmentSchema {
    typealias Services = AppServices
}

/// The app's environment: live in the app, the test's own in each test.
let appEnvironment = EnvironmentStack<AppSchema>(live: HabitatEnvironment(services: .live), test: { HabitatEnvironment(services: .failing) })
