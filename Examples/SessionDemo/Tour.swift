// A tour of Habitat's core: one global stack, a mock pushed over the live environment, a user logging
// in and out, a scoped override, and the change stream reporting each step.
//
//     swift run habitat-demo tour

import Foundation
import Habitat

// MARK: The app's environment

struct Account: Codable, Sendable, Updatable {
    var id: Int
    var name: String
}

struct RemoteConfig: Codable, Sendable {
    var apiBaseURL = "https://api.example.com"
    var features: Set<String> = []
}

/// An API client as a struct of closures, so a test can replace any endpoint.
struct APIClient: Sendable {
    var name: String
    var token: AuthToken?
    var fetchGreeting: @Sendable (_ token: AuthToken?) -> String
}

struct AppServices: Sendable, SessionDependent {
    var api: APIClient

    // Login hands the API client the token; logout takes it away, in the same atomic step.
    mutating func sessionChanged(to session: UserSession<Account>?) {
        api.token = session?.token
    }
}

enum TourApp: EnvironmentSchema {
    typealias Services = AppServices
    typealias User = Account
    typealias Config = RemoteConfig
}

extension APIClient {
    static let live = APIClient(name: "live", fetchGreeting: { token in
        token == nil ? "Hello, stranger (live)" : "Welcome back (live)"
    })
    static let mock = APIClient(name: "mock", fetchGreeting: { _ in "Hello from the mock" })
}

// The app's one global stack: its live environment, built on first use. (A fixed locale, so the tour
// prints the same on every machine.)
let appEnvironment = EnvironmentStack<TourApp>(
    live: HabitatEnvironment(services: AppServices(api: .live), config: RemoteConfig(), locale: Locale(identifier: "en_US"))
)

func describe(_ env: HabitatEnvironment<TourApp>) -> String {
    let who = env.session.map { "\($0.user.name) (\($0.state))" } ?? "nobody"
    return "api=\(env.services.api.name), user=\(who), locale=\(env.locale.identifier)"
}

// MARK: The tour

/// Prints the tour to standard output.
func runTour() async throws {

    // Subscribe first: a stream sees the changes made after it was created.
    let changes = appEnvironment.changes

    print("live:      \(describe(appEnvironment.current))")
    print("greeting:  \(appEnvironment.current.services.api.fetchGreeting(appEnvironment.current.services.api.token))")

    appEnvironment.push { $0.services.api = .mock }
    appEnvironment.push { $0.locale = Locale(identifier: "de_DE") }
    print("mocked:    \(describe(appEnvironment.current))")
    print("greeting:  \(appEnvironment.current.services.api.fetchGreeting(nil))")
    appEnvironment.pop()
    appEnvironment.pop()
    print("popped:    \(describe(appEnvironment.current))")
    print("pop base:  \(appEnvironment.pop() == nil ? "refused, the base stays" : "popped?!")")

    let token = AuthToken("tour-secret-token", expiresAt: Date().addingTimeInterval(3600))
    appEnvironment.login(user: Account(id: 1, name: "Ada"), token: token)
    print("logged in: \(describe(appEnvironment.current)), token \(appEnvironment.current.services.api.token.map(String.init(describing:)) ?? "none")")
    print("greeting:  \(appEnvironment.current.services.api.fetchGreeting(appEnvironment.current.services.api.token))")
    try appEnvironment.updateCurrentUser { $0.name = "Ada Lovelace" }
    appEnvironment.updateConfig { $0.features.insert("new-onboarding") }

    // A scoped override: only this task sees it, and its writes stay inside.
    appEnvironment.withEnvironment({ $0.locale = Locale(identifier: "fr_FR") }) {
        appEnvironment.logout()
        print("in scope:  \(describe(appEnvironment.current))")
    }
    print("after it:  \(describe(appEnvironment.current))")

    appEnvironment.logout()
    do {
        try appEnvironment.updateCurrentUser { $0.name = "nobody" }
    } catch {
        print("error:     \(error)")
    }
    print("logged out: \(describe(appEnvironment.current))")

    print("\nThe change stream saw, in order:")
    for await change in changes.prefix(8) {
        print("  #\(change.sequence) \(change.kind): depth \(change.depth), \(describe(change.new))")
    }
}
