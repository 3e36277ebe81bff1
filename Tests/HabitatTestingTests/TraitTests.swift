import Foundation
import Habitat
import HabitatPersistence
import HabitatTesting
import Testing

@Suite(.environment(AppEnvironment) { $0 = .test(services: Services(), config: Config(greeting: "Hi")) })
struct TraitTests {
    @Test func theSuiteTraitGivesEachTestTheTestEnvironment() {
        let env = AppEnvironment.current
        #expect(env.services.label == "unimplemented")
        #expect(env.config.greeting == "Hi")
        #expect(env.now() == TestFixtures.date)
        #expect(env.uuid() == UUID(uuidString: "00000000-0000-0000-0000-000000000000"))
        #expect(env.uuid() == UUID(uuidString: "00000000-0000-0000-0000-000000000001"))
        #expect(env.locale.identifier == "en_US_POSIX")
        #expect(env.timeZone.secondsFromGMT() == 0)
        #expect(env.calendar.identifier == .gregorian)
    }

    @Test(.environment(AppEnvironment) { $0.services.label = "mock" })
    func aTestTraitNestsInsideTheSuiteTrait() {
        #expect(AppEnvironment.current.services.label == "mock")
        #expect(AppEnvironment.current.config.greeting == "Hi")
    }

    @Test(.environment(AppEnvironment, HabitatEnvironment.test(services: Services(label: "whole"), config: Config())))
    func aTraitCanStartFromAWholeEnvironment() {
        #expect(AppEnvironment.current.services.label == "whole")
    }

    /// A whole environment plus the one change this test needs, in one trait.
    @Test(.environment(AppEnvironment, .test(services: Services(label: "whole"), config: Config())) { $0.config.greeting = "Hallo" })
    func aTraitCanStartFromAWholeEnvironmentAndChangeIt() {
        #expect(AppEnvironment.current.services.label == "whole")
        #expect(AppEnvironment.current.config.greeting == "Hallo")
        #expect(AppEnvironment.depth == 1, "one scope, its base the changed environment")
    }

    @Test(.environment(AppEnvironment) { $0.services.label = "repeated" }, arguments: 0..<3)
    func eachArgumentRunsInItsOwnScope(round: Int) {
        #expect(AppEnvironment.depth == 1)
        AppEnvironment.push { $0.config.greeting = "round \(round)" }
        AppEnvironment.login(user: User(id: round, name: ""), token: AuthToken("\(round)"))
        #expect(AppEnvironment.depth == 2)
        #expect(AppEnvironment.current.currentUser?.id == round)
    }

    /// 100 tests at once, each with its own mock API and its own user, each seeing only its own.
    @Test(arguments: 0..<100)
    func parallelTestsSeeOnlyTheirOwnMocksAndUsers(index: Int) async throws {
        try await AppEnvironment.withEnvironment({ env in
            env.services.api.fetchUser = { id in User(id: id, name: "mock \(index)") }
            env.services.label = "mock \(index)"
        }) { () async throws in
            AppEnvironment.login(user: User(id: index, name: "user \(index)"), token: AuthToken("t\(index)"))
            for _ in 0..<5 {
                await Task.yield()
                #expect(AppEnvironment.current.currentUser?.id == index)
                #expect(AppEnvironment.current.services.label == "mock \(index)")
                #expect(try await AppEnvironment.current.services.api.fetchUser(index).name == "mock \(index)")
                #expect(AppEnvironment.current.session?.token.secret == "t\(index)")
            }
        }
        #expect(AppEnvironment.current.currentUser == nil)
        #expect(AppEnvironment.current.services.label == "unimplemented")
    }
}

@Suite struct OutsideAnyTraitTests {
    @Test func theGlobalStackIsUntouched() {
        #expect(AppEnvironment.current.services.label == "live")
        #expect(AppEnvironment.current.currentUser == nil)
        #expect(AppEnvironment.depth == 1)
    }

    @Test func inTestEnvironmentKeepsServicesAndConfig() {
        let env = HabitatEnvironment<TestingApp>(services: Services(label: "x"), config: Config(greeting: "Yo"))
            .usingTestFixtures(now: Date(timeIntervalSince1970: 5))
        #expect(env.services.label == "x")
        #expect(env.config.greeting == "Yo")
        #expect(env.now() == Date(timeIntervalSince1970: 5))
    }

    @Test func eachIncrementingGeneratorStartsAtZero() {
        let first = TestFixtures.incrementingUUIDs()
        _ = first()
        let second = TestFixtures.incrementingUUIDs()
        #expect(second() == UUID(uuidString: "00000000-0000-0000-0000-000000000000"))
        #expect(first() == UUID(uuidString: "00000000-0000-0000-0000-000000000001"))
    }
}
