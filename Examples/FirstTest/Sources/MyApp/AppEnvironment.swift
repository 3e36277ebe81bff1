import Habitat

/// The app's world: live in the app, the test's own in each test.
let appEnvironment = EnvironmentStack(live: AppServices.live)
