import Foundation
@testable import HabitatPersistence
import HabitatPersistenceTesting
import Testing

/// The session engine under the explorer (`SessionExplorer.swift`): every path of events up to
/// a depth, each invariant checked after each step, and each invariant shown to catch a rule
/// broken on purpose.
@Suite struct SessionExplorerTests {
    static let scenarios: [(name: String, events: @Sendable (ExplorerEvent) -> Bool)] = [
        ("refresh races", { event in
            switch event {
            case .login(0), .follow, .refresh, .answer(.ok), .answer(.dropped), .logout: true
            default: false
            }
        }),
        ("crashes", { event in
            switch event {
            case .login, .addAccount(0), .switchAccount(0), .logout(0), .follow(1), .kill: true
            default: false
            }
        }),
        ("a locked device", { event in
            switch event {
            case .login(0), .follow(1), .lock, .unlock, .refresh(0), .answer(.ok), .logout(1): true
            default: false
            }
        }),
    ]

    @Test(arguments: 0..<3) func everyPathUpToTheDepthKeepsEveryInvariant(scenario: Int) async throws {
        let started = ContinuousClock.now
        let report = try await SessionExplorer(depth: 6, events: Self.scenarios[scenario].events).explore()
        print("session explorer, \(Self.scenarios[scenario].name): \(report.states) states, \(report.runs) runs, depth \(report.depthReached), \(ContinuousClock.now - started)")
        for violation in report.violations {
            Issue.record("\(violation.invariant): \(violation.detail), after \(violation.path)")
        }
    }
}
