import Foundation
import Habitat
import HabitatTesting
import ProfileFeature
import ProfileFeatureTestSupport
import XCTest

/// The same model under XCTest: `EnvironmentTestCase` runs every test, sync or async, in a
/// scope of its own that starts from the test world.
final class ProfileModelXCTests: EnvironmentTestCase<ProfileApp> {
    override func setUpEnvironment() -> (EnvironmentStack<ProfileApp>, HabitatEnvironment<ProfileApp>)? {
        (AppEnvironment, .profileTest)
    }

    func testSwappingTheAPIForAMock() async throws {
        AppEnvironment.login(user: .ada, token: AuthToken("tok"))
        AppEnvironment.replaceCurrent {
            $0.services.api.updateBio = { id, bio, _ in Profile(memberID: id, bio: bio) }
        }
        let profile = try await ProfileModel().updateBio("Poet")
        XCTAssertEqual(profile, Profile(memberID: 1, bio: "Poet"))
    }

    func testSigningInWithAMockAPI() async throws {
        AppEnvironment.replaceCurrent {
            $0.services.api.signIn = { _, _ in (.ada, AuthToken("tok")) }
        }
        let member = try await ProfileModel().signIn(email: "ada@example.com", password: "pw")
        XCTAssertEqual(member, .ada)
        XCTAssertEqual(AppEnvironment.current.currentUser, .ada)
    }

    func testTheDateIsUnderTheTestsControl() async throws {
        AppEnvironment.login(user: .ada, token: AuthToken("tok"))
        AppEnvironment.replaceCurrent {
            $0.services.api.fetchProfile = { id, _ in Profile(memberID: id, bio: "") }
            $0.now = { Date(timeIntervalSinceReferenceDate: 14 * 3600) }
        }
        let screen = try await ProfileModel().load()
        XCTAssertEqual(screen.greeting, "Good afternoon, Ada")
        XCTAssertEqual(screen.memberSince, "Member since March 2020")
    }

    func testEachTestStartsSignedOut() {
        XCTAssertNil(AppEnvironment.current.session)
        XCTAssertEqual(AppEnvironment.current.now(), TestWorld.date)
    }
}
