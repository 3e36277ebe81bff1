import Habitat

/// The app's types, named once.
enum AppWorld: EnvironmentSchema {
    typealias Services = AppServices
}

/// The app's world: live in the app, the test's own in each test.
let appEnvironment = EnvironmentStack<AppWorld>(live: HabitatEnvironment(services: .live))
