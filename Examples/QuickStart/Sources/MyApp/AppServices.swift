import Habitat

/// The API client as a struct of closures, so a test can replace any endpoint.
struct APIClient: Sendable {
    var fetchName: @Sendable (_ id: Int) async throws -> String
}

/// Everything the app depends on.
struct AppServices: Sendable {
    var api: APIClient
}

extension AppServices {
    /// The real services, built only when the app runs (never in a test).
    static var live: AppServices {
        AppServices(api: APIClient(fetchName: { id in "Member \(id)" }))
    }

    /// Services whose every call fails: what a test that installs none gets, instead of `live`.
    static var failing: AppServices {
        AppServices(api: APIClient(fetchName: { _ in throw NoTestServices() }))
    }
}

/// Thrown by the failing services: the test installed no services of its own.
struct NoTestServices: Error {}
