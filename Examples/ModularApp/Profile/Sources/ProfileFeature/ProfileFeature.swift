// The profile feature: what it needs from the app's environment, and its model. It knows nothing of
// the app, the app's user type or the projects feature.

public import Habitat

/// Who is signed in, as the profile feature sees them.
public struct ProfileMember: Sendable, Equatable {
    public var id: Int
    public var name: String
    public init(id: Int, name: String) { self.id = id; self.name = name }
}

/// Everything the profile feature needs. The app keeps one in its services; making it names
/// every need, so a need the app doesn't meet is a compile error there.
public struct ProfileServices: Sendable {
    /// Fetches a member's bio.
    public var fetchBio: @Sendable (_ memberID: Int) async throws -> String
    /// Who is signed in: the app sets it when its session changes.
    public var member: ProfileMember?

    public init(fetchBio: @escaping @Sendable (Int) async throws -> String, member: ProfileMember? = nil) {
        self.fetchBio = fetchBio
        self.member = member
    }
}

public enum ProfileError: Error, Equatable {
    case notSignedIn
}

/// The profile screen's logic.
public struct ProfileModel: Sendable {
    let environment: EnvironmentSlice<ProfileServices>

    /// - Parameter environment: The feature's view of the app's environment, given by the app.
    public init(environment: EnvironmentSlice<ProfileServices>) {
        self.environment = environment
    }

    /// The signed-in member's name and bio.
    public func load() async throws -> String {
        let services = environment.services
        guard let member = services.member else { throw ProfileError.notSignedIn }
        return "\(member.name): \(try await services.fetchBio(member.id))"
    }
}
