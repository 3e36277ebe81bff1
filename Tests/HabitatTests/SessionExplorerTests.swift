import Foundation
import Habitat
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
            case .login(0), .follow(1), .lock, .unlock, .refresh, .answer(.ok), .logout(1): true
            default: false
            }
        }),
        ("a kill while a request is out", { event in
            switch event {
            case .login(0), .follow(1), .refresh, .answer(.ok), .answer(.dropped), .kill(0, afterWrites: 0), .kill(0, afterWrites: 1), .kill(0, afterWrites: 2): true
            default: false
            }
        }),
    ]

    /// How deep the scenarios are explored: 6, or `HABITAT_EXPLORER_DEPTH` (CI's thread-sanitizer
    /// and checked runs explore to 3: the same code on every path, without the minutes of CPU
    /// that would slow the rest of the suite past its time limits).
    static let depth = ProcessInfo.processInfo.environment["HABITAT_EXPLORER_DEPTH"].flatMap { Int($0) } ?? 6

    @Test(arguments: 0..<4) func everyPathUpToTheDepthKeepsEveryInvariant(scenario: Int) async throws {
        let started = ContinuousClock.now
        let report = try await onBlockingThreads { try await SessionExplorer(depth: Self.depth, events: Self.scenarios[scenario].events).explore() }
        print("session explorer, \(Self.scenarios[scenario].name): \(report.states) states, \(report.runs) runs, depth \(report.depthReached), \(ContinuousClock.now - started)")
        for violation in report.violations {
            Issue.record("\(violation.invariant): \(violation.detail), after \(violation.path)")
        }
    }

    /// Every event at once (both processes' logins, accounts, switches, sign-outs, follows,
    /// refreshes and kills, every answer, lock and unlock): to depth 4 here (2,696 states, about
    /// 25 s), to `HABITAT_EXPLORER_DEPTH` when it is lower, and to `HABITAT_EXPLORER_FULL` when
    /// set (`HABITAT_EXPLORER_FULL=6 swift test --filter fullAlphabet`: the SessionEngine
    /// article says what each depth found and took).
    @Test func fullAlphabetKeepsEveryInvariant() async throws {
        let depth = ProcessInfo.processInfo.environment["HABITAT_EXPLORER_FULL"].flatMap { Int($0) } ?? min(Self.depth, 4)
        let started = ContinuousClock.now
        let explorer = SessionExplorer(depth: depth, progress: { report in
            print("session explorer, every event, depth \(report.depthReached): \(report.states) states, \(report.runs) runs, \(report.violations.count) invariants broken, \(ContinuousClock.now - started)")
        })
        let report = try await onBlockingThreads { try await explorer.explore() }
        print("session explorer, every event: \(report.states) states, \(report.runs) runs, depth \(report.depthReached), \(ContinuousClock.now - started)")
        for violation in report.violations {
            Issue.record("\(violation.invariant): \(violation.detail), after \(violation.path)")
        }
    }

    /// Found by the explorer (the locked device's scenario, depth 6): a stack that missed
    /// another's rotation refreshed while the store's secrets couldn't be read, saw no rotation,
    /// and sent the spent token again. It now sends nothing and answers `awaitingToken`.
    @Test func aStackThatMissedARotationSendsNothingWhileTheStoreIsLocked() async throws {
        let directory = try TemporaryDirectory()
        let world = try await Self.missedRotation(then: "lock", in: directory)
        let outcome = await world.processes[1].stack.refreshSession { _ in .refreshed(token: AuthToken("never")) }
        #expect(outcome == .awaitingToken)
        #expect(world.processes[1].stack.current.session?.token.secret == "ada#1", "p1 keeps what it holds, for the unlock to settle")
    }

    /// Found by the explorer over every event (depth 6): p0, holding Ada only as a background
    /// account (it signed its active account out while Ada's refresh was out), takes the token
    /// p1 signed Ada in with again; its save merges with the store, where p1 made Ada active, and
    /// the merge keeps the store's choice. The stack now takes what the merge saved: it compared
    /// only the tokens, which were the same, and kept Ada in the background while the store had
    /// her active.
    @Test func aMergeThatOnlyMakesAnAccountActiveIsTaken() async throws {
        let directory = try TemporaryDirectory()
        let world = try ExplorerWorld(directory: directory.url, plant: nil)
        await world.run(["p0.login", "p0.refresh", "p0.addAccount", "p0.logout", "p1.login", "answer(ok)"].compactMap(ExplorerEvent.init))
        #expect(world.violations.isEmpty, "\(world.violations)")
        #expect(world.processes[0].stack.current.session?.token.secret == world.server.current["ada"], "p0 holds Ada active, as the store does")
        #expect(world.processes[0].accounts == world.stored())
    }

    /// Found by the explorer once a request still out counted as sent (the refresh races,
    /// depth 6): a stack that missed another's rotation and then its sign-out refreshed the
    /// token the other had spent. It now takes the sign-out and asks nothing.
    @Test func aStackThatMissedARotationAndASignOutSendsNothing() async throws {
        let directory = try TemporaryDirectory()
        let world = try await Self.missedRotation(then: "p0.logout", in: directory)
        #expect(world.processes[1].stack.current.session == nil, "p1 took the sign-out")
    }

    /// Two refreshes of one account at once, in two processes: p1's waits for its turn while
    /// p0's request is out, and sends nothing whatever p0's answer: it takes the rotation, finds
    /// the token spent (a lost answer marks the lease), or, p0's request never having left, asks
    /// once itself.
    @Test(arguments: [("answer(ok)", 0), ("answer(dropped)", 0), ("answer(notSent)", 1)])
    func aRefreshWaitingForAnotherProcesssSendsNothingTwice(answer: String, sendsOfItsOwn: Int) async throws {
        let directory = try TemporaryDirectory()
        let world = try ExplorerWorld(directory: directory.url, plant: nil)
        await world.run(["p0.login", "p1.follow", "p0.refresh", "p1.refresh", answer].compactMap(ExplorerEvent.init))
        #expect(world.violations.isEmpty, "\(world.violations)")
        #expect(world.server.sent.values.allSatisfy { $0 == 1 })
        #expect(world.server.sent.count == (answer == "answer(notSent)" ? 0 : 1) + sendsOfItsOwn)
    }

    /// p1's refresh waits for its turn; p1 signs out meanwhile: when its turn comes, it asks
    /// nothing (before the fix, it sent the ended session's token).
    @Test func aWaitingRefreshWhoseStackSignedOutAsksNothing() async throws {
        let directory = try TemporaryDirectory()
        let world = try ExplorerWorld(directory: directory.url, plant: nil)
        await world.run(["p0.login", "p1.follow", "p0.refresh", "p1.refresh", "p1.logout", "answer(notSent)"].compactMap(ExplorerEvent.init))
        #expect(world.violations.isEmpty, "\(world.violations)")
        #expect(world.server.sent.isEmpty, "nobody sent anything")
    }

    /// Two refreshes wait at once: p1's at the lease while p0's request is out, and a second
    /// of p1's on p1's flight. When the answer comes, p1's turn finds the rotation p0 saved and
    /// takes it; the second takes what the first landed. One token was sent, once.
    @Test func twoRefreshesWaitingAtOnceSendNothingMore() async throws {
        let directory = try TemporaryDirectory()
        let world = try ExplorerWorld(directory: directory.url, plant: nil)
        await world.run(["p0.login", "p1.follow", "p0.refresh", "p1.refresh", "p1.refresh", "answer(ok)"].compactMap(ExplorerEvent.init))
        #expect(world.violations.isEmpty, "\(world.violations)")
        #expect(world.server.sent == ["ada#1": 1], "only p0's request went out")
        for process in world.processes {
            #expect(process.stack.current.session?.token.secret == world.server.current["ada"], "every stack holds the rotated token")
        }
    }

    /// A second refresh on the stack whose request is out joins it and takes its answer: the
    /// server hears one request.
    @Test func aRefreshJoiningOneInFlightSendsNothing() async throws {
        let directory = try TemporaryDirectory()
        let world = try ExplorerWorld(directory: directory.url, plant: nil)
        await world.run(["p0.login", "p0.refresh", "p0.refresh", "answer(dropped)"].compactMap(ExplorerEvent.init))
        #expect(world.violations.isEmpty, "\(world.violations)")
        #expect(world.server.sent == ["ada#1": 1])
        #expect(world.processes[0].stack.current.session == nil, "the lost answer ended the session, for both callers")
    }

    /// p0's refresh waits for the lease p1's request holds, and a second refresh of p0 joined it;
    /// p0 is killed (saving an account it added). Both end with the process (the joined one gives
    /// up, sends nothing and keeps no lease), and p1's answer lands: the server hears one request,
    /// and the relaunched p0's refresh takes the token p1 saved, asking nothing.
    @Test func aKillAfterARefreshJoinedEndsBothWithTheProcess() async throws {
        let directory = try TemporaryDirectory()
        let world = try ExplorerWorld(directory: directory.url, plant: nil)
        await world.run(["p0.login", "p1.follow", "p1.refresh", "p0.refresh", "p0.refresh", "p0.kill(after: 0 writes)", "p0.addAccount", "answer(ok)", "p0.refresh"].compactMap(ExplorerEvent.init))
        #expect(world.violations.isEmpty, "\(world.violations)")
        #expect(world.waiter == nil && world.joiner == nil, "both refreshes ended with p0")
        #expect(world.server.sent == ["ada#1": 1], "only p1's request went out")
        #expect(world.processes[0].stack.current.session?.token.secret == world.server.current["ada"], "the relaunched p0 took p1's rotation")
    }

    /// A second refresh joined p0's request; p0 dies saving the answer. The joined refresh takes
    /// the flight's end and sends nothing; the relaunched p0 holds the token that was sent, and
    /// its lease, which marks it spent, keeps it from being sent again.
    @Test func aKillWhileARefreshJoinedItsRequestSendsNothingMore() async throws {
        let directory = try TemporaryDirectory()
        let world = try ExplorerWorld(directory: directory.url, plant: nil)
        await world.run(["p0.login", "p0.refresh", "p0.refresh", "p0.kill(after: 0 writes)", "answer(ok)", "p0.refresh"].compactMap(ExplorerEvent.init))
        #expect(world.violations.isEmpty, "\(world.violations)")
        #expect(world.joiner == nil)
        #expect(world.server.sent == ["ada#1": 1], "the spent token went out once")
        #expect(world.processes[0].stack.current.session == nil, "the relaunched p0's token was spent: its session ends")
    }

    /// A save's tidying isn't made durable at once: a kill before the next durable write undoes
    /// it (the model loses it), and the relaunch restores the refreshed token all the same.
    @Test func aKillUndoesARefreshsTidyingAndLosesNothing() async throws {
        let directory = try TemporaryDirectory()
        let world = try ExplorerWorld(directory: directory.url, plant: nil)
        await world.run(["p0.login", "p0.refresh", "answer(ok)", "p0.kill(after: 0 writes)", "p0.addAccount"].compactMap(ExplorerEvent.init))
        #expect(world.violations.isEmpty, "\(world.violations)")
        let item = try #require(try world.secrets.secret(forKey: "habitat.session.token.ada"))
        #expect(TokenRecord.decode(item)?.tokens.count == 2, "the previous token's drop was lost with the kill")
        #expect(world.processes[0].stack.current.session?.token.secret == world.server.current["ada"], "the relaunch has the refreshed token")
    }

    /// p0 is killed signing its account out after deleting the token, before the snapshot: the
    /// store holds the sign-out (a snapshot naming a token that is gone). p1, which knew the
    /// account there, refreshes: it takes the sign-out and asks nothing, and the sign-out stays.
    @Test func aRefreshAfterASignOutKilledHalfwayTakesTheSignOut() async throws {
        let directory = try TemporaryDirectory()
        let world = try ExplorerWorld(directory: directory.url, plant: nil)
        await world.run(["p0.login", "p1.follow", "p0.kill(after: 1 writes)", "p0.logout", "p1.refresh"].compactMap(ExplorerEvent.init))
        #expect(world.violations.isEmpty, "\(world.violations)")
        #expect(world.server.sent.isEmpty, "p1 asked nothing")
        #expect(world.processes[1].stack.current.session == nil, "p1 took the sign-out")
    }

    /// p1 looks at the store, p0 refreshes, then `event`, then p1 refreshes the token it holds:
    /// the token p0 spent is sent no second time, and p1 asks nothing.
    static func missedRotation(then event: String, in directory: TemporaryDirectory) async throws -> ExplorerWorld {
        let world = try ExplorerWorld(directory: directory.url, plant: nil)
        await world.run(["p0.login", "p1.follow", "p0.refresh", "answer(ok)", event, "p1.refresh"].compactMap(ExplorerEvent.init))
        #expect(world.violations.isEmpty, "\(world.violations)")
        #expect(world.server.sent == ["ada#1": 1], "the first token, sent once, by p0")
        #expect(world.inFlight == nil, "p1 asked nothing")
        return world
    }
}

/// Each invariant catches a rule broken on purpose: the explorer, given the broken rule, finds a
/// path that breaks the invariant, and says which. (They check the checker, not the engine: CI's
/// thread-sanitizer and checked runs, which explore less deep, skip them.)
@Suite(.enabled(if: SessionExplorerTests.depth >= 6)) struct SessionExplorerPlantTests {
    /// The events and depth in which each plant's shortest counterexample lies.
    static func search(for plant: ExplorerPlant) -> (depth: Int, events: @Sendable (ExplorerEvent) -> Bool) {
        switch plant {
        // NB: a process killed once it sent the token, before it saved the sign-out: the lease
        // is then all that tells another process the token is spent.
        case .leaseMarksLost:
            (6, { event in
                switch event {
                case .login(0), .follow(1), .kill(0, afterWrites: 0), .refresh, .answer(.dropped): true
                default: false
                }
            })
        case .secretsLostInCrash: (4, SessionExplorerTests.scenarios[1].events)
        case .adoptsWithoutTaking:
            (5, { event in
                switch event {
                case .login(0), .logout(0), .follow(1), .addAccount(1): true
                default: false
                }
            })
        case .adoptsCrossedTokens, .storeDropsSnapshot, .followerKnowsFirst: (3, { _ in true })
        case .forgetsKnowledge: (4, SessionExplorerTests.scenarios[0].events)
        }
    }

    @Test(arguments: ExplorerPlant.allCases) func aBrokenRuleIsCaught(plant: ExplorerPlant) async throws {
        let (depth, events) = Self.search(for: plant)
        let report = try await onBlockingThreads { try await SessionExplorer(depth: depth, events: events, plant: plant, stopAt: plant.breaks).explore() }
        let caught = report.violations.first { $0.invariant == plant.breaks }
        #expect(caught != nil, "\(plant) went unseen in \(report.states) states")
        print("session explorer, planted \(plant): \(caught.map { "\($0.detail), after \($0.path)" } ?? "not caught") (\(report.runs) runs)")
    }
}

/// A recorded trace (the events in order, each fault and answer among them) replays to the same
/// bytes in the stores: the engine decides nothing at random but the pairing identifiers, which
/// a replay numbers. How to record one for a bug report: the Session engine article.
@Suite struct SessionReplayTests {
    static let trace = """
        p0.login
        p1.addAccount
        p0.follow
        p0.kill(after: 2 writes)
        p0.switch
        p1.refresh
        p0.logout
        answer(dropped)
        lock
        p0.login
        unlock
        p1.follow
        p1.refresh
        answer(ok)
        """

    /// The stores' bytes at the end of `path`, in a world of its own.
    static func replay(_ path: [ExplorerEvent]) async throws -> (values: [String: Data], secrets: [String: Data]) {
        let directory = try TemporaryDirectory()
        let world = try ExplorerWorld(directory: directory.url, plant: nil)
        await world.run(path)
        #expect(world.violations.isEmpty, "\(world.violations)")
        let secrets = Dictionary(uniqueKeysWithValues: world.secrets.keys.map { ($0, (try? world.secrets.secret(forKey: $0)) ?? nil) }).compactMapValues { $0 }
        return (world.values.contents, secrets)
    }

    @Test func aRecordedTraceReplaysToTheSameBytes() async throws {
        let path = Self.trace.split(separator: "\n").map { ExplorerEvent(String($0.trimmingCharacters(in: .whitespaces))) }
        #expect(!path.contains(nil), "every line of the trace names an event")
        let first = try await Self.replay(path.compactMap { $0 })
        let second = try await Self.replay(path.compactMap { $0 })
        #expect(first.values == second.values)
        #expect(first.secrets == second.secrets)
        #expect(first.values["habitat.session"] != nil && !first.secrets.isEmpty, "the trace leaves a session to compare")
        // NB: the trace's own lines are what `ExplorerEvent.description` prints for a path.
        #expect(path.compactMap { $0?.description } == Self.trace.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) })
    }
}


