import Foundation
import Habitat
import HabitatPersistence
import HabitatTesting
import Testing

/// A mock that counts its calls: a class, so an environment that reused it would show its count.
final class CallCounter: Sendable {
    private let count = LockedBox(0)

    func call() -> Int { count.withLock { $0 += 1; return $0 } }
}

/// Services holding a mock class, as many apps' do.
struct CountingServices: Sendable {
    var counter = CallCounter()
}

enum CountingApp: EnvironmentSchema {
    typealias Services = CountingServices
}

let countingEnvironment = EnvironmentStack<CountingApp>(HabitatEnvironment(services: CountingServices()))

/// Every argument of a parameterized test runs in an environment built for it: its mocks are its own,
/// whichever trait form builds them, and whatever order or parallelism the cases run in.
/// (Swift Testing runs a repetition through the same scope as an argument, so it gets a fresh
/// environment the same way; this toolchain's `swift test` has no flag to repeat a run.)
@Suite struct FreshEnvironmentTests {
    @Test(.environment(countingEnvironment, .test(services: CountingServices())), arguments: 0..<8)
    func eachArgumentGetsAnEnvironmentOfItsOwnFromAWholeEnvironmentTrait(argument: Int) {
        #expect(countingEnvironment.current.services.counter.call() == 1, "case \(argument) saw another case's mock")
    }

    @Test(.environment(countingEnvironment) { $0.services.counter = CallCounter() }, arguments: 0..<8)
    func eachArgumentGetsAnEnvironmentOfItsOwnFromAChangeTrait(argument: Int) {
        #expect(countingEnvironment.current.services.counter.call() == 1, "case \(argument) saw another case's mock")
        countingEnvironment.push { $0.services.counter = CallCounter() }
        #expect(countingEnvironment.depth == 2, "and its pushes are its own")
    }

    @Test(.environment(countingEnvironment, .test(services: CountingServices())) { _ in }, arguments: 0..<8)
    func eachArgumentGetsAnEnvironmentOfItsOwnFromAnEnvironmentAndChangeTrait(argument: Int) {
        #expect(countingEnvironment.current.services.counter.call() == 1, "case \(argument) saw another case's mock")
    }
}

/// A services-only app, as the README's quick start writes it: the stack made from its live
/// services, each test given its own services by the `services:` trait.
let servicesOnlyEnvironment = EnvironmentStack(live: CountingServices())

@Suite struct ServicesTraitTests {
    @Test(.environment(servicesOnlyEnvironment, services: CountingServices()), arguments: 0..<8)
    func eachArgumentGetsServicesOfItsOwnInTheTestEnvironment(argument: Int) {
        let environment = servicesOnlyEnvironment.current
        #expect(environment.services.counter.call() == 1, "case \(argument) saw another case's mock")
        #expect(environment.now() == TestFixtures.date && environment.locale == TestFixtures.locale && environment.timeZone == TestFixtures.timeZone)
        #expect(servicesOnlyEnvironment.liveBaseBuilds == 0, "a test run never builds the live services")
    }

    @Test(.environment(servicesOnlyEnvironment, services: CountingServices()) { $0.locale = Locale(identifier: "de_DE") })
    func theChangeRunsOnTheTestEnvironment() {
        #expect(servicesOnlyEnvironment.current.locale.identifier == "de_DE")
        #expect(servicesOnlyEnvironment.current.now() == TestFixtures.date)
    }

    @Test func theSchemaIsServicesOnly() {
        #expect(ObjectIdentifier(type(of: servicesOnlyEnvironment)) == ObjectIdentifier(EnvironmentStack<ServicesOnly<CountingServices>>.self))
        #expect(ObjectIdentifier(ServicesOnly<CountingServices>.User.self) == ObjectIdentifier(NoUser.self))
        #expect(ObjectIdentifier(ServicesOnly<CountingServices>.Config.self) == ObjectIdentifier(NoConfig.self))
    }
}
