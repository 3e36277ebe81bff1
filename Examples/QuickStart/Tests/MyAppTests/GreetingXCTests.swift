import HabitatTesting
import XCTest
@testable import MyApp

// XCTest: every test of the class runs in a scope of its own, from this environment.
final class GreetingXCTests: EnvironmentTestCase<AppSchema> {
    override func setUpEnvironment() -> (EnvironmentStack<AppSchema>, HabitatEnvironment<AppSchema>)? {
        (appEnvironment, .test(services: AppServices(api: APIClient(fetchName: unimplementedEndpoint("APIClient.fetchName")))))
    }

    func testGreetsTheMemberByName() async throws {
        appEnvironment.replaceCurrent { $0.services.api.fetchName = { _ in "Ada" } }
        let text = try await greeting(for: 1)
        XCTAssertEqual(text, "Hello, Ada")
    }
}
