// The app's environment. This module is built with `.defaultIsolation(MainActor.self)`, as Xcode 26
// creates app modules: everything here is on the main actor unless it says otherwise.

import Foundation
import Habitat

// NB: `nonisolated` on the types the schema names. In a main-actor module a plain
// `struct Account: Codable` gets a main-actor-isolated `Codable` conformance, which Habitat can't
// use to save a session off the main actor: "main actor-isolated conformance of 'Account' to
// 'Decodable' cannot satisfy conformance requirement for a 'Sendable' type parameter".
// Plain data is safe anywhere; `nonisolated` says so.

/// The signed-in member.
public nonisolated struct Account: Codable, Sendable, Equatable, Identifiable {
    public var id: Int
    public var name: String

    public init(id: Int, name: String) {
        self.id = id
        self.name = name
    }
}

/// What the server tells the app.
public nonisolated struct AppConfig: Codable, Sendable, Equatable, DefaultConfig {
    public var greeting = "Hello"

    public init() {}
}

/// The server's sign-in and refresh endpoints, as closures a test or a preview can replace.
public nonisolated struct AuthAPI: Sendable {
    public var signIn: @Sendable (_ email: String) async throws -> (Account, AuthToken)
    public var refresh: @Sendable (_ token: AuthToken) async throws -> AuthToken

    public init(
        signIn: @escaping @Sendable (_ email: String) async throws -> (Account, AuthToken),
        refresh: @escaping @Sendable (_ token: AuthToken) async throws -> AuthToken
    ) {
        self.signIn = signIn
        self.refresh = refresh
    }
}

/// Everything the app depends on; the profile feature's needs among them.
public nonisolated struct AppServices: Sendable, SessionDependent {
    public var auth: AuthAPI
    /// The profile feature's services: the feature reads them through a slice.
    public var profile: ProfileServices
    /// The user analytics tags events with, told by every session change.
    public var analyticsUserID: Int?

    public init(auth: AuthAPI, profile: ProfileServices) {
        self.auth = auth
        self.profile = profile
    }

    public mutating func sessionChanged(to session: UserSession<Account>?) {
        analyticsUserID = session?.user.id
        profile.member = session.map { ProfileMember(id: $0.user.id, name: $0.user.name) }
    }
}

/// The app's types, named once.
public nonisolated enum MainApp: EnvironmentSchema {
    public typealias Services = AppServices
    public typealias User = Account
    public typealias Config = AppConfig
}

public nonisolated extension AuthAPI {
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

public nonisolated extension AppServices {
    /// The real services.
    static var live: AppServices {
        AppServices(auth: .live, profile: ProfileServices(fetchBio: { id in "Member since \(2000 + id)" }))
    }

    /// Services that answer from fixtures, for previews and tests.
    static var preview: AppServices {
        AppServices(auth: .preview, profile: ProfileServices(fetchBio: { _ in "Wrote the first program" }))
    }
}

// NB: `nonisolated`, so tests and background work can read the stack without hopping to the
// main actor; the stack is `Sendable` and safe from any thread. The live environment is built when the
// app first reads the stack; Xcode's previews get the preview environment, signed in as Ada, and never
// build the live one.
/// The app's environment: live in the app, the preview environment in Xcode's previews, a test's own in tests.
public nonisolated let appEnvironment = EnvironmentStack<MainApp>(
    live: HabitatEnvironment(services: .live),
    preview: .preview(services: .preview, signedInAs: Account(id: 1, name: "Ada"))
)
