import Habitat
import ProjectsFeature
import XCTest

final class ProjectsModelXCTests: XCTestCase {
    func testListsTheOwnersProjects() async throws {
        let model = ProjectsModel(environment: .test(ProjectsServices(listProjects: { id in ["p\(id)"] }, ownerID: 3)))
        let projects = try await model.load()
        XCTAssertEqual(projects, ["p3"])
    }
}
