// The projects feature: what it needs from the app's environment, and its model. It knows nothing of
// the app or the profile feature.

public import Habitat

/// Everything the projects feature needs.
public struct ProjectsServices: Sendable {
    /// Lists the projects an owner can see.
    public var listProjects: @Sendable (_ ownerID: Int) async throws -> [String]
    /// The signed-in owner's ID: the app sets it when its session changes.
    public var ownerID: Int?

    public init(listProjects: @escaping @Sendable (Int) async throws -> [String], ownerID: Int? = nil) {
        self.listProjects = listProjects
        self.ownerID = ownerID
    }
}

/// The projects screen's logic.
public struct ProjectsModel: Sendable {
    let environment: EnvironmentSlice<ProjectsServices>

    /// - Parameter environment: The feature's view of the app's environment, given by the app.
    public init(environment: EnvironmentSlice<ProjectsServices>) {
        self.environment = environment
    }

    /// The signed-in owner's projects, sorted; none when nobody is signed in.
    public func load() async throws -> [String] {
        let services = environment.services
        guard let owner = services.ownerID else { return [] }
        return try await services.listProjects(owner).sorted()
    }
}
