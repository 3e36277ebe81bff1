import Foundation
import Habitat
import HabitatOperators
import HabitatPersistence
import HabitatTesting
import Testing

// What users of an ios-oss-style `AppEnvironment` rely on: one struct of everything global, a
// stack of them whose top is "current", push/pop/replace for tests, and login, logout,
// updateCurrentUser and updateConfig moving the app from one state to the next, the services
// (API client, analytics, cache) changed in the same step.

/// The app's global stack, as such an app keeps it.
let appEnvironment = EnvironmentStack<AppSchema>(
    live: HabitatEnvironment(services: .recording()),
    test: { HabitatEnvironment(services: .recording()) }
)

/// A stack of the test's own, starting logged out.
private func freshStack() -> EnvironmentStack<AppSchema> {
    EnvironmentStack(HabitatEnvironment(services: .recording()))
}

@Suite struct EnvironmentStackScenarios {
    @Test func aPushedEnvironmentIsCurrentUntilItIsPopped() throws {
        let stack = freshStack()
        let base = stack.current
        stack.push(base.with(\.config.locale, "de"))
        #expect(stack.current.config.locale == "de")
        #expect(stack.depth == 2)
        let popped = try #require(stack.pop())
        #expect(popped.config.locale == "de", "pop returns what it removed")
        #expect(stack.current.config.locale == "en")
        #expect(stack.depth == 1)
    }

    @Test func theBaseIsNeverPopped() {
        let stack = freshStack()
        stack.push { $0.config.locale = "fr" }
        #expect(stack.pop() != nil)
        #expect(stack.pop() == nil, "popping the base does nothing")
        #expect(stack.pop() == nil)
        #expect(stack.depth == 1)
        #expect(stack.current.config.locale == "en", "the base is as it was")
    }

    @Test func replacingTheCurrentEnvironmentKeepsTheDepth() {
        let stack = freshStack()
        stack.push { $0.config.locale = "fr" }
        stack.replaceCurrent { $0.config.features = ["beta"] }
        #expect(stack.depth == 2)
        #expect(stack.current.config.features == ["beta"])
        #expect(stack.current.config.locale == "fr", "the rest of the top is kept")
        stack.pop()
        #expect(stack.current.config.features == [], "the environment below never saw the replacement")
    }

    @Test func loginSignsTheAPIClientAndTagsAnalyticsInOneStep() {
        let stack = freshStack()
        stack.login(user: .ada, token: AuthToken("oauth-1"))
        let now = stack.current
        #expect(now.currentUser == .ada)
        #expect(now.services.api.token == AuthToken("oauth-1"), "the API client holds the new token")
        #expect(now.services.analytics.memberID == 1, "analytics knows the member")
        now.services.api.send("/me")
        #expect(now.services.api.sent.all == [SentRequest(path: "/me", bearer: "oauth-1")])
    }

    @Test func updatingTheUserKeepsTheTokenAndTellsTheServices() throws {
        let stack = freshStack()
        stack.login(user: .ada, token: AuthToken("oauth-2"))
        var renamed = Member.ada
        renamed.name = "Ada L."
        try stack.updateCurrentUser(renamed)
        #expect(stack.current.currentUser?.name == "Ada L.")
        #expect(stack.current.session?.token == AuthToken("oauth-2"))
        #expect(stack.current.services.api.token == AuthToken("oauth-2"))
    }

    @Test func updatingTheUserWhileLoggedOutIsATypedErrorAndChangesNothing() {
        let stack = freshStack()
        #expect(throws: SessionError.self) { try stack.updateCurrentUser(.ada) }
        #expect(stack.current.currentUser == nil)
        #expect(stack.depth == 1)
    }

    @Test func updatingTheConfigKeepsTheSession() {
        let stack = freshStack()
        stack.login(user: .grace, token: AuthToken("oauth-3"))
        stack.updateConfig(RemoteConfig(features: ["dark-mode"], locale: "en"))
        #expect(stack.current.config.features == ["dark-mode"])
        #expect(stack.current.currentUser == .grace)
        stack.updateConfig { $0.locale = "pt" }
        #expect(stack.current.config == RemoteConfig(features: ["dark-mode"], locale: "pt"))
    }

    @Test func logoutForgetsTheUserTheTokenAndTheCache() throws {
        let stack = freshStack()
        stack.login(user: .ada, token: AuthToken("oauth-4"))
        stack.replaceCurrent { $0.services.cache.entries["projects"] = "cached" }
        let ended = try #require(stack.logout())
        #expect(ended.user == .ada)
        let now = stack.current
        #expect(now.currentUser == nil)
        #expect(now.services.api.token == nil, "requests go out unsigned")
        #expect(now.services.analytics.memberID == nil)
        #expect(now.services.cache.entries.isEmpty, "a new, empty cache")
        #expect(stack.logout() == nil, "logging out twice is nothing")
    }

    @Test func lensOperatorsChangeOneFieldOfACopy() {
        let base = HabitatEnvironment<AppSchema>(services: .recording())
        let german = base |> \.config.locale .~ "de"
        #expect(german.config.locale == "de")
        #expect(base.config.locale == "en", "the original is a value, unchanged")
        let both = base |> (\.config.locale .~ "de") <> (\.config.features .~ ["beta"])
        #expect(both.config == RemoteConfig(features: ["beta"], locale: "de"))
    }

    @Test func observersSeeEveryTransitionInOrderWithTheOldAndNewUser() async throws {
        let stack = freshStack()
        let changes = stack.changes
        stack.login(user: .ada, token: AuthToken("t"))
        try stack.updateCurrentUser(.grace)
        stack.logout()
        var seen: [(EnvironmentChangeKind, Int?, Int?)] = []
        for await change in changes {
            seen.append((change.kind, change.old.currentUser?.id, change.new.currentUser?.id))
            if seen.count == 3 { break }
        }
        #expect(seen.map(\.0) == [.login, .userUpdated, .logout])
        #expect(seen.map(\.1) == [nil, 1, 2], "each change carries the user before it")
        #expect(seen.map(\.2) == [1, 2, nil], "and the user after it")
    }
}

/// A mocked environment per test, as ios-oss's tests replace the current environment with one
/// whose API service is a mock: here each test gets its own through the trait, so tests in
/// parallel never see each other's mocks, logins or pushes.
@Suite(.environment(appEnvironment, services: .recording()))
struct MockedEnvironmentPerTestScenarios {
    @Test(arguments: 1...8)
    func eachTestsMocksAndLoginsAreItsOwn(id: Int) async throws {
        appEnvironment.replaceCurrent { $0.services.api.fetchProjects = { ["project \(id)"] } }
        appEnvironment.login(user: Member(id: id, name: "Member \(id)"), token: AuthToken("token-\(id)"))
        try await Task.sleep(for: .milliseconds(1))
        #expect(appEnvironment.current.services.api.fetchProjects() == ["project \(id)"])
        #expect(appEnvironment.current.currentUser?.id == id)
        appEnvironment.current.services.api.send("/projects")
        #expect(appEnvironment.current.services.api.sent.all == [SentRequest(path: "/projects", bearer: "token-\(id)")])
    }

    @Test func aTestStartsLoggedOutWithTheTestClock() {
        #expect(appEnvironment.current.currentUser == nil)
        #expect(appEnvironment.current.now() == TestFixtures.date)
        #expect(appEnvironment.depth == 1)
    }

    @Test func aPushInOneTestNeverReachesAnother() {
        appEnvironment.push { $0.config.locale = "ja" }
        #expect(appEnvironment.current.config.locale == "ja")
        #expect(appEnvironment.depth == 2)
    }
}
