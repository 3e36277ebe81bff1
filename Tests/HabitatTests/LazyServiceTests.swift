import Dispatch
import Foundation
import Habitat
import HabitatPersistence
import Testing

/// Counts how many times it was made, as an SDK's costly set-up would.
private final class CountingSDK: Sendable {
    static let made = RunCounter()
    let serial: Int
    init() { serial = Self.made.increment() }
}

private final class RunCounter: Sendable {
    private let lock = NSLock()
    nonisolated(unsafe) private var value = 0
    @discardableResult func increment() -> Int { lock.withLock { value += 1; return value } }
    var count: Int { lock.withLock { value } }
}

private struct Boom: Error, CustomStringConvertible { var description: String { "no network" } }

@Suite struct LazyServiceTests {
    @Test func theFactoryRunsOnFirstReadNotBefore() {
        let runs = RunCounter()
        let service = LazyService("clock") { runs.increment() }
        _ = service
        #expect(runs.count == 0)
        #expect(!service.isBuilt)
        #expect(service.wrappedValue == 1)
        #expect(service.wrappedValue == 1)
        #expect(runs.count == 1)
        #expect(service.isBuilt)
    }

    @Test func aThousandConcurrentFirstReadsRunTheFactoryOnce() async {
        let runs = RunCounter()
        let service = LazyService("slow") { () -> Int in
            Thread.sleep(forTimeInterval: 0.05)
            return runs.increment()
        }
        let values = await withTaskGroup(of: Int.self) { group in
            for _ in 0..<1_000 { group.addTask { service.wrappedValue } }
            return await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(runs.count == 1)
        #expect(service.factoryRuns == 1)
        #expect(values.count == 1_000 && Set(values) == [1])
    }

    @Test func threadsThatReadAtOnceShareOneBuild() {
        let runs = RunCounter()
        let service = LazyService("sdk") { () -> Int in
            Thread.sleep(forTimeInterval: 0.02)
            return runs.increment()
        }
        DispatchQueue.concurrentPerform(iterations: 64) { _ in #expect(service.wrappedValue == 1) }
        #expect(runs.count == 1)
    }

    @Test func copiesShareOneFactory() {
        struct Services: Sendable { @LazyService var sdk: CountingSDK }
        let before = CountingSDK.made.count
        let services = Services(sdk: CountingSDK())
        let copy = services
        #expect(CountingSDK.made.count == before, "the memberwise initialiser's value is built on first read")
        #expect(copy.sdk === services.sdk)
        #expect(services.$sdk.factoryRuns == 1)
    }

    @Test func settingTheServiceReplacesItReadyAndTheFactoryNeverRuns() {
        struct Services: Sendable { @LazyService var name: String }
        let runs = RunCounter()
        var services = Services(name: { runs.increment(); return "live" }())
        services.name = "mock"
        #expect(services.name == "mock")
        #expect(services.$name.isBuilt)
        #expect(runs.count == 0)
    }

    @Test func aFactoryThatThrowsGivesATypedErrorNamingTheService() {
        let runs = RunCounter()
        let service = LazyService<Int>("database") {
            runs.increment()
            throw Boom()
        }
        #expect(throws: LazyServiceError.factoryFailed(service: "database", reason: "no network")) { try service.get() }
        #expect(throws: LazyServiceError.factoryFailed(service: "database", reason: "no network")) { try service.get() }
        #expect(runs.count == 1, "a failed factory is not run again")
        #expect(LazyServiceError.factoryFailed(service: "database", reason: "no network").description
            == "the factory of the lazy service 'database' failed: no network")
    }

    @Test func aFactoryThatNeverFinishesTimesOutItsWaitersWithATypedError() async throws {
        let release = DispatchSemaphore(value: 0)
        let service = LazyService("stuck", timeout: .milliseconds(100)) { () -> Int in
            release.wait()
            return 7
        }
        let builder = Thread { _ = service.wrappedValue }
        builder.start()
        while service.factoryRuns == 0 { try await Task.sleep(for: .milliseconds(5)) }
        let started = Date()
        #expect(throws: LazyServiceError.timedOut(service: "stuck", after: .milliseconds(100))) { try service.get() }
        #expect(Date().timeIntervalSince(started) < 5)
        release.signal()
        while !service.isBuilt { try await Task.sleep(for: .milliseconds(5)) }
        #expect(try service.get() == 7, "once the factory returns, readers get its value")
    }

    @Test func aFactoryThatReadsItsOwnServiceFailsAtOnceAsACycle() {
        final class Loop: @unchecked Sendable { var service: LazyService<Int>? }   // set once, before any read
        let loop = Loop()
        loop.service = LazyService("loop", timeout: .seconds(30)) { try loop.service!.get() + 1 }
        let started = Date()
        #expect(throws: LazyServiceError.cycle(service: "loop")) { try loop.service!.get() }
        #expect(Date().timeIntervalSince(started) < 5, "a cycle is found, not waited out")
        #expect(LazyServiceError.cycle(service: "loop").description
            == "the factory of the lazy service 'loop' read 'loop' while building it: a dependency cycle")
    }

    @Test func aLiveEnvironmentWithLazyServicesBuildsNoneUntilRead() {
        let stack = EnvironmentStack<LazySchema>(HabitatEnvironment(services: LazyServices(sdk: CountingSDK())))
        stack.push { $0.locale = Locale(identifier: "fr_FR") }
        stack.withEnvironment({ $0.timeZone = TimeZone(secondsFromGMT: 0)! }) {}
        #expect(!stack.current.services.$sdk.isBuilt)
        let first = stack.current.services.sdk
        stack.pop()
        #expect(stack.current.services.sdk === first, "the pushed copy built the base's service")
    }
}

private struct LazyServices: Sendable { @LazyService var sdk: CountingSDK }
private enum LazySchema: EnvironmentSchema { typealias Services = LazyServices }
