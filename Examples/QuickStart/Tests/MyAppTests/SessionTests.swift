import HabitatTesting
import Testing
@testable import MyApp

// Every test of the suite starts from this environment, each in its own scope, in parallel.
@Suite(.environment(appEnvironment, services: AppServices(api: APIClient(fetchName: { _ in "Grace" }))))
struct SessionTests {
    @Test func signingInShowsTheMember() async throws {
        try await signIn(id: 2, token: AuthToken("t"))
        #expect(appEnvironment.current.currentUser == Account(id: 2, name: "Grace"))
    }

    @Test func eachTestHasItsOwnSession() {
        #expect(appEnvironment.current.currentUser == nil)   // the other test's login is not here
    }

    @Test(.environment(appEnvironment) { $0.config.timeout = 5 })   // a test changes its suite's environment
    func aTestChangesOneField() {
        #expect(appEnvironment.current.config.timeout == 5)
    }
}
