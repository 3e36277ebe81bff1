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
}
