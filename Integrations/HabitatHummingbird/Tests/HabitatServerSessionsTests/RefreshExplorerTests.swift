import Foundation
@testable import HabitatServerSessions
import Testing

/// The refresh explorer (`RefreshExplorer.swift`): every interleaving of two instances'
/// refreshes of one session, with faults and a lapse, keeps the fleet's promises; each promise
/// is shown to catch a rule broken on purpose.
@Suite("The refresh explorer: two instances, one backend, every interleaving", .timeLimit(.minutes(5)))
struct RefreshExplorerTests {
    /// `EXPLORER_DEPTH` and `EXPLORER_FAULTS` explore further (depth 22: about 3,700 states and
    /// 35 s here with one fault).
    @Test("Every state up to depth 14, with two faults and a lapse, keeps every invariant")
    func everyStateKeepsEveryInvariant() async throws {
        let environment = ProcessInfo.processInfo.environment
        let explorer = RefreshExplorer(
            depth: environment["EXPLORER_DEPTH"].flatMap { Int($0) } ?? 14,
            faults: environment["EXPLORER_FAULTS"].flatMap { Int($0) } ?? 2
        )
        let found = try await explorer.explore()
        print("refresh explorer: \(found.states) states, depth \(found.deepest), \(RefreshInvariant.allCases.count) invariants")
        if let violation = found.violation {
            Issue.record("\(violation.invariant) broken by \(violation.path.map(\.description).joined(separator: " ")): \(violation.state)")
        }
        #expect(found.states > 1000)
        // The routes the invariants are about, each met on some path: a takeover of a lapsed
        // lease, a refresh that outlived its lease, an answer dropped or past its deadline, the
        // database down while a session is ended, a write whose reply was lost, a caller that
        // found the lease busy, a request that never left.
        let routes: Set = ["take:lapsed", "set:lapsed", "answer:dropped", "answer:timedOut", "remove:down", "set:lost", "take:busy", "send:notSent"]
        #expect(routes.subtracting(found.reached).isEmpty, "not reached: \(routes.subtracting(found.reached).sorted())")
    }

    @Test("Each invariant catches the rule broken on purpose for it", arguments: RefreshPlant.allCases)
    func eachInvariantCatchesItsPlant(_ plant: RefreshPlant) async throws {
        let found = try await RefreshExplorer(plant: plant).explore()
        let violation = try #require(found.violation, "the plant went unnoticed")
        #expect(violation.invariant == plant.breaks, "\(violation.path.map(\.description))")
    }

    @Test("A path replays to the same state")
    func aPathReplaysToTheSameState() async throws {
        let path: [RefreshStep] = [
            .start(0), .grant(0, .proceed), .grant(0, .proceed), .start(1), .grant(1, .proceed), .grant(1, .proceed),
            .grant(0, .proceed), .grant(0, .sent), .lapse, .grant(1, .proceed), .grant(1, .proceed), .grant(0, .ok),
            .grant(1, .proceed), .grant(0, .proceed),
        ]
        var states: [String] = []
        for _ in 0..<2 {
            let (world, broken) = try await RefreshExplorer().run(path)
            #expect(broken == nil)
            states.append(await world.describe())
            await world.tearDown()
        }
        #expect(states[0] == states[1])
        // s1 took the lapsed lease over and ended the session; s0's answer can't be written.
        #expect(states[0].hasPrefix("session: gone"), "\(states[0])")
    }
}
