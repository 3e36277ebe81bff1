#if canImport(Combine)
import Combine
#endif
import Habitat

/// Who is signed in, as the profile feature sees them.
public nonisolated struct ProfileMember: Sendable, Equatable {
    public var id: Int
    public var name: String

    public init(id: Int, name: String) {
        self.id = id
        self.name = name
    }
}

/// Everything the profile feature needs, in its own terms: it never sees the app's schema.
public nonisolated struct ProfileServices: Sendable {
    /// Fetches a member's bio.
    public var fetchBio: @Sendable (_ memberID: Int) async throws -> String
    /// Who is signed in: the app sets it when its session changes.
    public var member: ProfileMember?

    public init(fetchBio: @escaping @Sendable (_ memberID: Int) async throws -> String, member: ProfileMember? = nil) {
        self.fetchBio = fetchBio
        self.member = member
    }
}

/// The profile screen's model: reads the feature's slice of the app's environment.
public final class ProfileModel: ObservableObject {
    /// What the screen shows.
    @Published public private(set) var text = ""
    private let environment: EnvironmentSlice<ProfileServices>

    /// - Parameter environment: The feature's view of the app's environment: `appEnvironment.slice(\.profile)`
    ///   in the app, `EnvironmentSlice.test(...)` in the feature's tests.
    public init(environment: EnvironmentSlice<ProfileServices>) {
        self.environment = environment
    }

    /// Loads the signed-in member's bio.
    public func load() async {
        let services = environment.services
        guard let member = services.member else {
            text = "Nobody is signed in"
            return
        }
        do {
            text = "\(member.name): \(try await services.fetchBio(member.id))"
        } catch {
            text = "Could not load the profile"
        }
    }
}
