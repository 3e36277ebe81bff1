import Habitat
import ProjectsFeature
import Testing

@Suite struct ProjectsModelTests {
    @Test func listsTheOwnersProjectsSorted() async throws {
        let model = ProjectsModel(environment: .test(ProjectsServices(listProjects: { _ in ["b", "a"] }, ownerID: 1)))
        #expect(try await model.load() == ["a", "b"])
    }

    @Test func listsNothingWhenNobodyIsSignedIn() async throws {
        let model = ProjectsModel(environment: .test(ProjectsServices(listProjects: { _ in ["secret"] })))
        #expect(try await model.load() == [])
    }
}
