import Habitat

/// The signed-in user. `Identifiable`: logs name the user by `id` only.
struct Account: Codable, Sendable, Equatable, Identifiable {
    var id: Int
    var name: String
}

/// What the server tells the app; every field has a default.
struct RemoteConfig: Codable, Sendable, DefaultConfig {
    var timeout = 30
}

extension AppSchema {
    typealias User = Account
    typealias Config = RemoteConfig
}

/// Signs a member in: the whole app sees the new user in one step.
func signIn(id: Int, token: AuthToken) async throws {
    let name = try await appEnvironment.current.services.api.fetchName(id)
    appEnvironment.login(user: Account(id: id, name: name), token: token)
}
