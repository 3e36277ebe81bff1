import HabitatTesting
@testable import AppCore

/// The same view model under XCTest: every test runs in a scope of its own. (XCTest's test cases
/// are not main-actor types, so this target keeps the default isolation and the tests that touch
/// the model say `@MainActor`.)
final class SessionModelXCTests: EnvironmentTestCase<MainApp> {
    override func setUpEnvironment() -> (EnvironmentStack<MainApp>, HabitatEnvironment<MainApp>)? {
        (appEnvironment, .test(services: .preview))
    }

    @MainActor
    func testSigningInThenOut() async throws {
        let model = SessionModel()
        try await model.signIn(email: "ada@example.com")
        XCTAssertEqual(appEnvironment.current.currentUser?.name, "Ada")
        model.signOut()
        XCTAssertNil(appEnvironment.current.session)
        XCTAssertEqual(model.status, "Signed out")
    }
}
