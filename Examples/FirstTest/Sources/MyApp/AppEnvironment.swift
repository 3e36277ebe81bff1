import Habitat

/// The app's environment: live in the app, the test's own in each test.
let appEnvironment = EnvironmentStack(live: AppServices.live, test: { .failing })
