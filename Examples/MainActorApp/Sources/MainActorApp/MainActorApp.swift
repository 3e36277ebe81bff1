// A main-actor app, as Xcode 26 creates them: this module is built with
// `.defaultIsolation(MainActor.self)`, so everything here is on the main actor unless it says
// otherwise. Its view model logs in, refreshes, restores at launch and reads `current`, and is
// tested in Swift Testing and XCTest (Tests/).

import Foundation
import Habitat
import Observation

// NB: `nonisolated` on the types the schema names. In a main-actor module a plain
// `struct Account: Codable` gets a main-actor-isolated `Codable` conformance, which Habitat can't
// use to save a session off the main actor: "main actor-isolated conformance of 'Account' to
// 'Decodable' cannot satisfy conformance requirement for a 'Sendable' type parameter".
// Plain data is safe anywhere; `nonisolated` says so.
nonisolated struct Account: Codable, Sendable, Equatable {
    var id: Int
    var name: String
}

nonisolated struct AppConfig: Codable, Sendable, Equatable {
    var greeting = "Hello"
}

/// The server's sign-in and refresh endpoints, as closures a test can replace.
nonisolated struct AuthAPI: Sendable {
    var signIn: @Sendable (_ email: String) async throws -> (Account, AuthToken)
    var refresh: @Sendable (_ token: AuthToken) async throws -> AuthToken
}

nonisolated struct AppServices: Sendable, SessionDependent {
    var auth: AuthAPI
    /// The user analytics tags events with, told by every session change.
    var analyticsUserID: Int?

    mutating func sessionChanged(to session: UserSession<Account>?) {
        analyticsUserID = session?.user.id
    }
}

nonisolated enum MainApp: EnvironmentSchema {
    typealias Services = AppServices
    typealias User = Account
    typealias Config = AppConfig
}

nonisolated extension AuthAPI {
    /// A pretend server: any email signs in, every refresh rotates the token.
    static let live = AuthAPI(
        signIn: { email in (Account(id: email.count, name: String(email.prefix { $0 != "@" })), AuthToken("live-\(email)")) },
        refresh: { token in AuthToken(token.secret + "+") }
    )

    /// For previews and tests: everyone signs in as Ada (id 1) with `preview-token`.
    static let preview = AuthAPI(
        signIn: { _ in (Account(id: 1, name: "Ada"), AuthToken("preview-token")) },
        refresh: { token in AuthToken(token.secret + "+") }
    )
}

// NB: `nonisolated`, so tests and background work can read the stack without hopping to the
// main actor; the stack is `Sendable` and safe from any thread.
nonisolated let AppEnvironment = EnvironmentStack<MainApp>(
    HabitatEnvironment(services: AppServices(auth: .live), config: AppConfig())
)

/// The sign-in screen's model: main-actor state a SwiftUI view would show.
@Observable
final class SessionModel {
    /// What the screen says.
    private(set) var status = "Starting"
    /// Follows the stack's session and configuration for the view.
    let environment = ObservableEnvironment(AppEnvironment)

    var greeting: String {
        guard let user = environment.currentUser else { return "Please sign in" }
        return "\(environment.config.greeting), \(user.name)"
    }

    /// Restores the saved session at launch; a damaged store is reported, not fatal.
    func launch(from sessions: SessionStore<MainApp>) {
        do {
            let snapshot = try AppEnvironment.restore(from: sessions)
            status = snapshot?.session == nil ? "Signed out" : "Restored"
        } catch {
            status = "Could not restore: \(error.localizedDescription)"
        }
    }

    func signIn(email: String) async throws {
        let (account, token) = try await AppEnvironment.current.services.auth.signIn(email)
        AppEnvironment.login(user: account, token: token)
        status = "Signed in"
    }

    /// Confirms the session with the server. The closure runs on the main actor, so it may
    /// touch the model's state.
    func refresh() async throws -> SessionRefreshOutcome {
        try await AppEnvironment.refreshSession { session in
            status = "Refreshing"
            return .refreshed(token: try await AppEnvironment.current.services.auth.refresh(session.token))
        }
    }

    func signOut() {
        AppEnvironment.logout()
        status = "Signed out"
    }
}
