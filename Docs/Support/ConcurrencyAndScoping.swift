// What the Concurrency and scoping article assumes but doesn't show. Scripts/check-docs.py
// compiles it with the article's code blocks.
import Foundation
import Habitat

struct Account: Codable, Sendable { var id: Int; var name: String }
struct RemoteConfig: Codable, Sendable {}
struct Analytics: Sendable { func track(_ event: String) {} }
struct AppServices: Sendable { var analytics = Analytics() }
enum MyApp: EnvironmentSchema {
    typealias Services = AppServices
    typealias User = Account
    typealias Config = RemoteConfig
}
let AppEnvironment = EnvironmentStack<MyApp>(
    HabitatEnvironment(services: AppServices(), config: RemoteConfig())
        .loggingIn(user: Account(id: 1, name: "Ada"), token: AuthToken("t"))
)

/// Greets the signed-in member in the environment's language.
struct GreetingModel {
    func load() async throws -> String {
        let environment = AppEnvironment.current
        let hello = environment.locale.identifier.hasPrefix("fr") ? "Bonjour" : "Hello"
        return "\(hello), \(environment.currentUser?.name ?? "stranger")"
    }
}

func legacyCodeThatReadsAppEnvironment() {
    _ = AppEnvironment.current.locale
}
