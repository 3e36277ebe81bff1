import Foundation
import Testing
import Habitat
import HabitatPersistence

struct TestUser: Codable, Sendable, Hashable, Updatable {
    var id: Int
    var name: String
}

struct TestConfig: Codable, Sendable, Hashable, Updatable, DefaultConfig {
    var timeout: Int = 30
    var features: Set<String> = []
}

/// Services that remember the token login handed them, like an API client signing requests.
struct TestServices: Sendable, SessionDependent {
    var label: String = "live"
    /// Kept as an `AuthToken`, not a string, so printing the services can't leak it.
    var token: AuthToken?
    var tokenChanges = 0
    /// The signed-in user's name, as an analytics client would tag events with it.
    var userName: String?

    var authorization: String? { token.map { "Bearer \($0.secret)" } }

    mutating func sessionChanged(to session: UserSession<TestUser>?) {
        self.token = session?.token
        userName = session?.user.name
        tokenChanges += 1
    }
}

enum TestApp: EnvironmentSchema {
    typealias Services = TestServices
    typealias User = TestUser
    typealias Config = TestConfig
}

typealias TestEnvironment = HabitatEnvironment<TestApp>

let fixedDate = Date(timeIntervalSince1970: 1_800_000_000)

func makeEnvironment(_ label: String = "live") -> TestEnvironment {
    HabitatEnvironment(
        services: TestServices(label: label),
        config: TestConfig(),
        now: { fixedDate },
        locale: Locale(identifier: "en_US_POSIX"),
        timeZone: TimeZone(secondsFromGMT: 0)!
    )
}

func makeStack(_ label: String = "live") -> EnvironmentStack<TestApp> {
    EnvironmentStack(makeEnvironment(label))
}

extension TestUser {
    static let ada = TestUser(id: 1, name: "Ada")
    static let grace = TestUser(id: 2, name: "Grace")
}

/// Collects a stream's elements until `count` arrived.
func collect<Element>(_ count: Int, from stream: AsyncStream<Element>) async -> [Element] {
    var result: [Element] = []
    for await element in stream {
        result.append(element)
        if result.count == count { break }
    }
    return result
}

/// Waits until `condition` holds, polling every millisecond, on the caller's actor. The limit,
/// 150 s, only keeps a broken build from hanging: under the thread sanitizer, with every test at
/// once on two cores, a follower's hop (to the main actor, say) once waited over 60 s.
func eventually(
    isolation: isolated (any Actor)? = #isolation,
    _ condition: () -> Bool,
    sourceLocation: SourceLocation = #_sourceLocation
) async throws {
    let deadline = ContinuousClock.now + .seconds(150)
    while !condition() {
        // NB: named, so that `.ci/run` tells a wait starved past its limit (as a time limit is,
        // under the sanitizer on a busy machine) from any other failure, and retries it alone.
        let withinTheWaitLimit = ContinuousClock.now < deadline
        try #require(withinTheWaitLimit, "never happened", sourceLocation: sourceLocation)
        try await Task.sleep(for: .milliseconds(1))
    }
}
