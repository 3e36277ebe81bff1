// What a test's isolation costs: one test's worth of work (install a test environment, 10 reads,
// leave) through Habitat's `.environment` trait and swift-dependencies' `.dependencies` trait,
// each driven the way Swift Testing drives a trait (`provideScope(for:testCase:performing:)`,
// with the running test), beside a control that calls the same 10 reads with no trait. What the
// runner itself does per test case is the same for both and left out: measured from outside,
// it is about 2 ms a case here and its noise buries the traits' difference.
//
// Run by `isolation.sh` (ISOLATION_ITERATIONS set); `swift test` alone skips it.
// NB: judged by time, medians of interleaved rounds: valgrind 3.19 dies inside the Swift Testing
// runner, so instructions can't be counted here.

import BenchSupport
import Dependencies
import DependenciesTestSupport
import Foundation
import Habitat
import HabitatTesting
import Testing

/// The app's stack, as a test run sees it: no live environment built.
let isolationStack = EnvironmentStack<BenchApp>(live: makeEnvironment())

/// The test's configuration: the one value each test installs and then reads.
let testConfig = BenchConfig(timeout: 31)

@Suite struct IsolationCost {
    static let iterations = ProcessInfo.processInfo.environment["ISOLATION_ITERATIONS"].flatMap(Int.init)

    @Test(.enabled(if: iterations != nil))
    func oneTestsIsolation() async throws {
        let test = try #require(Test.current)
        let iterations = try #require(Self.iterations)
        let habitat: EnvironmentTrait<BenchApp> = .environment(isolationStack, HabitatEnvironment(services: BenchServices(), config: testConfig))
        let dependencies: _DependenciesTrait = .dependencies { $0.benchConfig = testConfig }
        let habitatReads: @Sendable () async throws -> Void = {
            var total = 0
            for _ in 0..<10 { total &+= isolationStack.current.config.timeout }
            precondition(total == 310)
        }
        let dependencyReads: @Sendable () async throws -> Void = {
            @Dependency(\.benchConfig) var config
            var total = 0
            for _ in 0..<10 { total &+= config.timeout }
            precondition(total == 310)
        }
        let plainReads: @Sendable () async throws -> Void = {
            var total = 0
            for _ in 0..<10 { total &+= plainGlobal.timeout }
            precondition(total == 300)
        }
        let clock = ContinuousClock()
        func perTest(_ body: () async throws -> Void) async rethrows -> Double {
            let start = clock.now
            for _ in 0..<iterations { try await body() }
            let elapsed = (clock.now - start).components
            return (Double(elapsed.seconds) * 1e9 + Double(elapsed.attoseconds) / 1e9) / Double(iterations)
        }
        var samples: [String: [Double]] = [:]
        for _ in 0..<7 {
            samples["control", default: []].append(try await perTest { try await plainReads() })
            samples["habitat", default: []].append(try await perTest {
                try await habitat.provideScope(for: test, testCase: nil, performing: habitatReads)
            })
            samples["dependencies", default: []].append(try await perTest {
                try await dependencies.provideScope(for: test, testCase: nil, performing: dependencyReads)
            })
        }
        func median(_ name: String) -> Double { samples[name, default: []].sorted()[3] }
        let (control, habitatNs, dependenciesNs) = (median("control"), median("habitat"), median("dependencies"))
        let line = String(format: "isolation\t%.0f\t%.0f\t%.0f\t%.2f\n", control, habitatNs, dependenciesNs, habitatNs / dependenciesNs)
        FileHandle.standardOutput.write(Data(line.utf8))
    }
}
