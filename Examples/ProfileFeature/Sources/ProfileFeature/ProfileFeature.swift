// A small app-like module: a profile screen's command layer over an API client, reading
// everything it needs from the app's one environment stack.

public import Foundation
public import Habitat

// MARK: The app's world

/// A signed-in member.
public struct Member: Codable, Sendable, Equatable {
    public var id: Int
    public var name: String
    public var joined: Date

    public init(id: Int, name: String, joined: Date) {
        self.id = id
        self.name = name
        self.joined = joined
    }
}

/// What the server says about a member's profile.
public struct Profile: Codable, Sendable, Equatable {
    public var memberID: Int
    public var bio: String

    public init(memberID: Int, bio: String) {
        self.memberID = memberID
        self.bio = bio
    }
}

/// The profile API, as a struct of closures so tests can replace any endpoint.
public struct ProfileAPI: Sendable {
    public var signIn: @Sendable (_ email: String, _ password: String) async throws -> (Member, AuthToken)
    public var fetchProfile: @Sendable (_ memberID: Int, _ token: AuthToken) async throws -> Profile
    public var updateBio: @Sendable (_ memberID: Int, _ bio: String, _ token: AuthToken) async throws -> Profile

    public init(
        signIn: @escaping @Sendable (String, String) async throws -> (Member, AuthToken),
        fetchProfile: @escaping @Sendable (Int, AuthToken) async throws -> Profile,
        updateBio: @escaping @Sendable (Int, String, AuthToken) async throws -> Profile
    ) {
        self.signIn = signIn
        self.fetchProfile = fetchProfile
        self.updateBio = updateBio
    }
}

public struct ProfileServices: Sendable {
    public var api: ProfileAPI
    public init(api: ProfileAPI) { self.api = api }
}

public struct ProfileConfig: Codable, Sendable, Equatable {
    public var maxBioLength: Int
    public init(maxBioLength: Int = 160) { self.maxBioLength = maxBioLength }
}

public enum ProfileApp: EnvironmentSchema {
    public typealias Services = ProfileServices
    public typealias User = Member
    public typealias Config = ProfileConfig
}

extension ProfileAPI {
    /// The live API would talk to a server; this example has none.
    public static let live = ProfileAPI(
        signIn: { _, _ in throw ProfileError.offline },
        fetchProfile: { _, _ in throw ProfileError.offline },
        updateBio: { _, _, _ in throw ProfileError.offline }
    )
}

/// The app's global stack.
public let AppEnvironment = EnvironmentStack<ProfileApp>(
    HabitatEnvironment(services: ProfileServices(api: .live), config: ProfileConfig())
)

// MARK: The command layer

public enum ProfileError: Error, Equatable {
    case offline
    case notSignedIn
    case bioTooLong(limit: Int)
}

/// What the profile screen shows.
public struct ProfileScreen: Equatable, Sendable {
    public var greeting: String
    public var memberSince: String
    public var bio: String

    public init(greeting: String, memberSince: String, bio: String) {
        self.greeting = greeting
        self.memberSince = memberSince
        self.bio = bio
    }
}

/// The profile screen's logic: sign in, load, edit the bio, sign out.
public struct ProfileModel: Sendable {
    public init() {}

    /// Signs in and makes the member the current user.
    public func signIn(email: String, password: String) async throws -> Member {
        let (member, token) = try await AppEnvironment.current.services.api.signIn(email, password)
        AppEnvironment.login(user: member, token: token)
        return member
    }

    /// Loads the screen for the signed-in member.
    public func load() async throws -> ProfileScreen {
        let env = AppEnvironment.current
        guard let session = env.session else { throw ProfileError.notSignedIn }
        let profile = try await env.services.api.fetchProfile(session.user.id, session.token)
        return ProfileScreen(
            greeting: "\(greeting(at: env.now(), in: env.calendar, timeZone: env.timeZone)), \(session.user.name)",
            memberSince: memberSince(session.user.joined, env: env),
            bio: profile.bio
        )
    }

    /// Saves a new bio, within the configured length.
    public func updateBio(_ bio: String) async throws -> Profile {
        let env = AppEnvironment.current
        guard let session = env.session else { throw ProfileError.notSignedIn }
        guard bio.count <= env.config.maxBioLength else { throw ProfileError.bioTooLong(limit: env.config.maxBioLength) }
        return try await env.services.api.updateBio(session.user.id, bio, session.token)
    }

    /// Signs out.
    public func signOut() {
        AppEnvironment.logout()
    }

    private func greeting(at date: Date, in calendar: Calendar, timeZone: TimeZone) -> String {
        var calendar = calendar
        calendar.timeZone = timeZone
        switch calendar.component(.hour, from: date) {
        case 5..<12: return "Good morning"
        case 12..<18: return "Good afternoon"
        default: return "Good evening"
        }
    }

    private func memberSince(_ joined: Date, env: HabitatEnvironment<ProfileApp>) -> String {
        let formatter = DateFormatter()
        formatter.locale = env.locale
        formatter.timeZone = env.timeZone
        formatter.calendar = env.calendar
        formatter.dateFormat = "MMMM yyyy"
        return "Member since \(formatter.string(from: joined))"
    }
}
