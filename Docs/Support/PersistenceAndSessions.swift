// What the Persistence and sessions article assumes but doesn't show. Scripts/check-docs.py
// compiles it with the article's code blocks.
import Foundation
import Habitat

struct Account: Codable, Sendable { var id: Int; var name: String }
struct RemoteConfig: Codable, Sendable { var theme = "light" }
struct AppServices: Sendable {}
enum MyApp: EnvironmentSchema {
    typealias Services = AppServices
    typealias User = Account
    typealias Config = RemoteConfig
}
let AppEnvironment = EnvironmentStack<MyApp>(HabitatEnvironment(services: AppServices(), config: RemoteConfig()))

/// The app's server: a refresh is accepted with a new token, or the session is revoked.
enum RefreshAnswer: Sendable { case ok(AuthToken), revoked }
struct AuthServer: Sendable {
    func refresh(_ token: AuthToken) async throws -> RefreshAnswer { .ok(AuthToken(token.secret + "+")) }
}
let api = AuthServer()

func log(_ message: String) { print(message) }
@MainActor func showLogin(reason: String) { print(reason) }

let store = InMemoryStore()
let secrets = InMemorySecretStore()

/// Version 2 added a theme to the configuration.
func addDefaultTheme(to data: Data) throws -> Data {
    guard var document = try JSONSerialization.jsonObject(with: data) as? [String: Any],
          var payload = document["payload"] as? [String: Any],
          var config = payload["config"] as? [String: Any]
    else { throw CocoaError(.coderReadCorrupt) }
    config["theme"] = config["theme"] ?? "light"
    payload["config"] = config
    document["payload"] = payload
    document["version"] = 2
    return try JSONSerialization.data(withJSONObject: document)
}

/// The user an earlier version of the app kept beside its token, if any.
func legacyUser() -> Account? { Account(id: 1, name: "Ada") }
