import Habitat
import ProfileFeature
import XCTest

final class ProfileModelXCTests: XCTestCase {
    func testLoadsTheSignedInMembersBio() async throws {
        let services = ProfileServices(fetchBio: { _ in "hello" }, member: ProfileMember(id: 2, name: "Lin"))
        let text = try await ProfileModel(environment: .test(services)).load()
        XCTAssertEqual(text, "Lin: hello")
    }
}
