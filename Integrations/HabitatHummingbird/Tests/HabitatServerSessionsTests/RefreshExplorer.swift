// The refresh explorer: a model checker of the fleet's refresh lease. Two server instances share
// one backend (the add-on's `MemorySessionBackend`, on a clock the explorer moves) and one
// upstream token server, which rotates a refresh token each time it is spent. The explorer drives
// the real `ServerSessions.refresh` through every sequence of a bounded set of steps, breadth
// first, merging paths that reach the same state, and checks three invariants after every step.
// Only the upstream and the faults are simulated: the refresh's decisions, its lease and its
// fenced writes are the product's.
//
// Each instance is a lane: a refresh call runs in a task of its own, and every backend call and
// upstream request it makes parks until the explorer lets it go, with what happens to it: made,
// the database down (nothing done), made with its reply lost; sent or never sent; answered,
// dropped, or past its deadline. Between those, the explorer may crash an instance (its parked
// call and everything after it does nothing; its lease stays, and it restarts idle) or let time
// pass beyond every lease (they lapse, and the access token expires).
//
// A state is replayed from the start for each of its successors (a task's state can't be
// copied), and identified by what the backend holds (the session, its lease), the upstream's
// tokens, and each lane's call so far (what each of its steps returned: what its local state
// follows from). A lane that keeps finding the lease busy loops without changing anything: its
// repeated looks count once.

import Foundation
@testable import HabitatServerSessions
import Logging
import Testing

/// The session's value in the explorer: its upstream refresh token, and the period its access
/// token expires at (stale from then on).
struct UpstreamTokens: Codable, Sendable, Equatable {
    var refresh: String
    var expiresAt: Int
}

/// What a parked call is let do.
enum RefreshGrant: Hashable, CaseIterable, CustomStringConvertible {
    /// A backend call is made and answers.
    case proceed
    /// The database is down: the call fails, and nothing is done.
    case down
    /// The call is made, and its reply is lost: the caller sees the database down.
    case lostReply
    /// The refresh request reaches the token server, which rotates the token.
    case sent
    /// The request never leaves (no connection).
    case notSent
    /// The token server's answer arrives.
    case ok
    /// The answer is lost (a dropped connection, a 500 after rotating).
    case dropped
    /// The call's deadline passes before the answer.
    case timedOut

    var isFault: Bool { self != .proceed && self != .sent && self != .ok }

    var description: String {
        switch self {
        case .proceed: "proceed"
        case .down: "down"
        case .lostReply: "lostReply"
        case .sent: "sent"
        case .notSent: "notSent"
        case .ok: "ok"
        case .dropped: "dropped"
        case .timedOut: "timedOut"
        }
    }
}

/// A step of a path the explorer drives.
enum RefreshStep: Hashable, CustomStringConvertible {
    /// Instance `i` gets a request that finds the session stale, and calls `refresh`.
    case start(Int)
    /// Instance `i`'s parked call goes on, as `grant` says.
    case grant(Int, RefreshGrant)
    /// Instance `i` crashes, and restarts idle.
    case crash(Int)
    /// Time passes beyond every lease: they lapse, and the access token expires.
    case lapse

    var description: String {
        switch self {
        case .start(let i): "s\(i).refresh"
        case .grant(let i, let grant): "s\(i).\(grant)"
        case .crash(let i): "s\(i).crash"
        case .lapse: "lapse"
        }
    }
}

/// The promises the explorer checks.
enum RefreshInvariant: String, CaseIterable, CustomStringConvertible {
    case sentOnce = "(a) a refresh token is sent upstream at most once, across the fleet"
    case spentFencedOff = "(h) a stored session whose refresh token was sent keeps a lease in place, marking it spent"
    case endedOnlyWhenSpent = "(i) a session ends only when a refresh may have spent one of its tokens (one was sent upstream, or a lease on it lapsed)"

    var description: String { rawValue }
}

/// A rule broken on purpose, to show that the invariant it guards catches it.
enum RefreshPlant: CaseIterable {
    /// The backend reports a lease taken over after it lapsed as a free one.
    case lapsedLeaseLooksFree
    /// The upstream's client reports a lost answer as a request that never left.
    case droppedLooksNotSent
    /// The upstream's client reports a request that never left as a lost answer.
    case notSentLooksUnclear

    var breaks: RefreshInvariant {
        switch self {
        case .lapsedLeaseLooksFree: .sentOnce
        case .droppedLooksNotSent: .spentFencedOff
        case .notSentLooksUnclear: .endedOnlyWhenSpent
        }
    }
}

/// The instances' calls: each parks at every backend call and upstream request until the
/// explorer lets it go. One call runs at a time; `settle()` waits until each lane is parked or done.
final class RefreshLanes: Sendable {
    struct Lane {
        /// The parked call's name, and where to resume it (`nil`: the instance crashed).
        var parked: (op: String, resume: CheckedContinuation<RefreshGrant?, Never>)?
        var running = false
        var inCall = false
        var crashed = false
        /// What each step of the current call returned.
        var trace: [String] = []
        /// The current call's lease holder, once it asked for the lease.
        var holder: String?
    }

    private struct State {
        var lanes = [Lane(), Lane()]
        var settled: CheckedContinuation<Void, Never>?
    }

    private let state = LockedBox(State())

    /// Runs `body` on the state; wakes `settle()` once no lane runs.
    private func update<R>(_ body: (inout State) -> R) -> R {
        let (result, wake) = state.withLock { state -> (R, CheckedContinuation<Void, Never>?) in
            let result = body(&state)
            guard state.settled != nil, !state.lanes.contains(where: \.running) else { return (result, nil) }
            defer { state.settled = nil }
            return (result, state.settled)
        }
        wake?.resume()
        return result
    }

    var lanes: [Lane] { state.withLock { $0.lanes } }

    /// Parks lane `i`'s call `op`; returns what the explorer grants, or `nil` once it crashed.
    func park(_ i: Int, _ op: String) async -> RefreshGrant? {
        await withCheckedContinuation { continuation in
            let crashed = update { state in
                guard !state.lanes[i].crashed else { return true }
                state.lanes[i].parked = (op, continuation)
                state.lanes[i].running = false
                return false
            }
            if crashed { continuation.resume(returning: nil) }
        }
    }

    /// Notes what lane `i`'s step returned.
    func record(_ i: Int, _ step: String) {
        update { state in
            guard !state.lanes[i].crashed else { return }
            var trace = state.lanes[i].trace
            trace.append(step)
            // A look that found the lease busy, again: nothing changed since the last one.
            if step == "take:busy", trace.count >= 4, Array(trace.suffix(2)) == Array(trace.dropLast(2).suffix(2)) {
                trace.removeLast(2)
            }
            state.lanes[i].trace = trace
        }
    }

    func noteHolder(_ i: Int, _ holder: String) {
        update { $0.lanes[i].holder = holder }
    }

    func started(_ i: Int) {
        update { state in
            state.lanes[i] = Lane(running: true, inCall: true)
        }
    }

    func finished(_ i: Int) {
        update { state in
            state.lanes[i].running = false
            state.lanes[i].inCall = false
        }
    }

    /// Lets lane `i`'s parked call go on with `grant`, or crashes it (`nil`).
    func resume(_ i: Int, with grant: RefreshGrant?) {
        let parked = update { state in
            defer { state.lanes[i].parked = nil }
            state.lanes[i].running = state.lanes[i].parked != nil
            if grant == nil { state.lanes[i].crashed = true }
            return state.lanes[i].parked
        }
        parked?.resume.resume(returning: grant)
    }

    /// A crashed lane's instance restarts: idle, no lease its own.
    func restart(_ i: Int) {
        update { $0.lanes[i] = Lane() }
    }

    /// Waits until every lane is parked or done.
    func settle() async {
        await withCheckedContinuation { continuation in
            let now = state.withLock { state in
                guard state.lanes.contains(where: \.running) else { return true }
                state.settled = continuation
                return false
            }
            if now { continuation.resume() }
        }
    }
}

/// An instance's handle on the shared backend: each call parks first.
struct GatedBackend: SessionBackend {
    let base: MemorySessionBackend
    let lane: Int
    let lanes: RefreshLanes
    let plant: RefreshPlant?

    private func call<R>(
        _ op: String,
        _ body: () async throws(SessionBackendError) -> R,
        says: (R) -> String = { _ in "ok" }
    ) async throws(SessionBackendError) -> R {
        switch await lanes.park(lane, op) {
        case nil:
            throw .unavailable("crashed")
        case .down?:
            lanes.record(lane, op + ":down")
            throw .unavailable("down")
        case .lostReply?:
            _ = try? await body()
            lanes.record(lane, op + ":lost")
            throw .unavailable("reply lost")
        default:
            do {
                let result = try await body()
                lanes.record(lane, op + ":" + says(result))
                return result
            } catch {
                let says = switch error {
                case .leaseLapsed: "lapsed"
                case .versionConflict: "conflict"
                default: "error"
                }
                lanes.record(lane, op + ":" + says)
                throw error
            }
        }
    }

    func get(id: String) async throws(SessionBackendError) -> StoredSession? {
        try await call("get") { () throws(SessionBackendError) in try await base.get(id: id) } says: { $0.map { "v\($0.version)" } ?? "nil" }
    }

    func set(id: String, data: Data, expiresIn: Duration, expectedVersion: Int64, fencedBy claim: LeaseClaim) async throws(SessionBackendError) -> StoredSession {
        try await call("set") { () throws(SessionBackendError) in
            try await base.set(id: id, data: data, expiresIn: expiresIn, expectedVersion: expectedVersion, fencedBy: claim)
        }
    }

    func remove(id: String, fencedBy claim: LeaseClaim) async throws(SessionBackendError) {
        try await call("remove") { () throws(SessionBackendError) in try await base.remove(id: id, fencedBy: claim) }
    }

    func remove(id: String) async throws(SessionBackendError) {
        try await call("removeUnfenced") { () throws(SessionBackendError) in try await base.remove(id: id) }
    }

    func takeLease(_ name: String, holder: String, duration: Duration) async throws(SessionBackendError) -> LeaseTake {
        lanes.noteHolder(lane, holder)
        return try await call("take") { () throws(SessionBackendError) in
            let take = try await base.takeLease(name, holder: holder, duration: duration)
            if plant == .lapsedLeaseLooksFree, case .takenOverLapsed = take { return .taken }
            return take
        } says: {
            switch $0 {
            case .busy: "busy"
            case .taken: "taken"
            case .takenOverLapsed: "lapsed"
            }
        }
    }

    func releaseLease(_ name: String, holder: String) async throws(SessionBackendError) {
        try await call("release") { () throws(SessionBackendError) in try await base.releaseLease(name, holder: holder) }
    }

    // Not on a refresh's path: straight through.
    func create(id: String, data: Data, expiresIn: Duration) async throws(SessionBackendError) -> StoredSession {
        try await base.create(id: id, data: data, expiresIn: expiresIn)
    }

    func set(id: String, data: Data, expiresIn: Duration, expectedVersion: Int64) async throws(SessionBackendError) -> StoredSession {
        try await call("setUnfenced") { () throws(SessionBackendError) in
            try await base.set(id: id, data: data, expiresIn: expiresIn, expectedVersion: expectedVersion)
        }
    }

    func acquireLease(_ name: String, holder: String, duration: Duration) async throws(SessionBackendError) -> Bool {
        try await base.acquireLease(name, holder: holder, duration: duration)
    }

    func recordAttempt(_ key: String, limit: Int, within window: Duration) async throws(SessionBackendError) -> Bool {
        try await base.recordAttempt(key, limit: limit, within: window)
    }

    func forgetAttempts(_ key: String) async throws(SessionBackendError) {
        try await base.forgetAttempts(key)
    }

    func recordSession(_ id: String, owner: String, limit: Int) async throws(SessionBackendError) -> [String] {
        try await base.recordSession(id, owner: owner, limit: limit)
    }

    func follow(_ handle: @escaping @Sendable (SessionChange) -> Void) async {
        await base.follow(handle)
    }
}

/// The upstream token server: it rotates a refresh token each time it is spent, and counts
/// what it was sent.
final class SimulatedUpstream: Sendable {
    struct State {
        var current = "T0"
        var issued = 0
        var sent: [String: Int] = [:]
    }

    struct Dropped: Error {}
    struct Rejected: Error {}

    private let state = LockedBox(State())
    var now: State { state.withLock { $0 } }

    /// Lane `i`'s refresh request for `tokens`: parked before it leaves, and before its answer.
    func fetch(_ i: Int, _ tokens: UpstreamTokens, lanes: RefreshLanes, period: @Sendable () -> Int, plant: RefreshPlant?) async throws -> UpstreamTokens {
        switch await lanes.park(i, "send") {
        case nil:
            throw CancellationError()
        case .notSent?:
            lanes.record(i, "send:notSent")
            throw plant == .notSentLooksUnclear ? Dropped() : URLError(.cannotConnectToHost)
        default:
            break
        }
        let rotated: String? = state.withLock { state in
            state.sent[tokens.refresh, default: 0] += 1
            guard tokens.refresh == state.current else { return nil }
            state.issued += 1
            state.current = "T\(state.issued)"
            return state.current
        }
        lanes.record(i, "send:sent")
        switch await lanes.park(i, "answer") {
        case nil:
            throw CancellationError()
        case .dropped?:
            lanes.record(i, "answer:dropped")
            throw plant == .droppedLooksNotSent ? URLError(.notConnectedToInternet) : Dropped()
        case .timedOut?:
            lanes.record(i, "answer:timedOut")
            throw Race<UpstreamTokens>.TimedOut()
        default:
            lanes.record(i, "answer:ok")
            // A spent token: the server refuses it (invalid_grant).
            guard let rotated else { throw Rejected() }
            return UpstreamTokens(refresh: rotated, expiresAt: period() + 1)
        }
    }
}

/// One run of a path: a backend, an upstream, two instances, one session.
final class RefreshWorld: Sendable {
    /// The lease: what the backend counts on its (moved) clock. The call's deadline, half of it,
    /// is real time, and never passes in a run: the explorer's `timedOut` stands for it.
    static let lease = Duration.seconds(3600)

    let lanes: RefreshLanes
    let upstream = SimulatedUpstream()
    let backend: MemorySessionBackend
    let instances: [ServerSessions<UpstreamTokens>]
    let id: String
    let plant: RefreshPlant?
    private let clock: LockedBox<(period: Int, lapsedUnreleased: Bool)>

    var period: Int { clock.withLock { $0.period } }
    var lapsedUnreleased: Bool { clock.withLock { $0.lapsedUnreleased } }

    var leaseName: String { "refresh:\(StoredSession.key(for: id))" }

    init(plant: RefreshPlant?) async throws {
        let (origin, clock, lanes) = (ContinuousClock.now, LockedBox((period: 0, lapsedUnreleased: false)), RefreshLanes())
        let backend = MemorySessionBackend(now: { origin + Self.lease * 2 * clock.withLock { $0.period } })
        (self.clock, self.lanes, self.backend) = (clock, lanes, backend)
        let seed = ServerSessions<UpstreamTokens>(backend: backend, lifetime: .seconds(1_000_000))
        id = try await seed.create(UpstreamTokens(refresh: "T0", expiresAt: 0)).id
        instances = [0, 1].map { i in
            var sessions = ServerSessions<UpstreamTokens>(
                backend: GatedBackend(base: backend, lane: i, lanes: lanes, plant: plant), lifetime: .seconds(1_000_000)
            )
            sessions.pause = { _ in }
            return sessions
        }
        self.plant = plant
    }

    /// The session as the backend holds it, if it does.
    func stored() async -> UpstreamTokens? {
        guard let stored = try? await backend.get(id: StoredSession.key(for: id)) else { return nil }
        return try? JSONDecoder().decode(UpstreamTokens.self, from: stored.data)
    }

    func take(_ step: RefreshStep) async {
        switch step {
        case .start(let i):
            lanes.started(i)
            let (sessions, id, lanes, upstream, plant) = (instances[i], id, lanes, upstream, plant)
            let silent = Logger(label: "explorer") { _ in SwiftLogNoOpLogHandler() }
            Task {
                // What the call returns or throws is the invariants' business only through the
                // backend and the upstream.
                _ = try? await withLogger(silent) { _ in
                    try await sessions.refresh(id, lease: Self.lease, when: { $0.expiresAt <= self.period }) { tokens in
                        try await upstream.fetch(i, tokens, lanes: lanes, period: { self.period }, plant: plant)
                    } apply: { $0 = $1 }
                }
                lanes.finished(i)
            }
        case .grant(let i, let grant):
            lanes.resume(i, with: grant)
        case .crash(let i):
            lanes.resume(i, with: nil)
            await lanes.settle()
            lanes.restart(i)
        case .lapse:
            let held = backend.leases[leaseName] != nil
            clock.withLock {
                $0.period += 1
                if held { $0.lapsedUnreleased = true }
            }
        }
        await lanes.settle()
    }

    /// Ends every call still parked (its instance crashes), so no task outlives the run.
    func tearDown() async {
        for i in 0..<2 { lanes.resume(i, with: nil) }
        await lanes.settle()
    }

    /// The state, canonically: what the backend holds, the upstream's tokens, each lane's call.
    func describe() async -> String {
        let lease = backend.leases[leaseName]
        let laneStates = lanes.lanes
        let owner = lease.map { lease in laneStates.firstIndex { $0.inCall && $0.holder == lease.holder }.map { "s\($0)" } ?? "old" }
        let upstream = upstream.now
        var parts = [
            "session: " + (await stored().map { "\($0.refresh)@\($0.expiresAt)" } ?? "gone"),
            "lease: " + (lease.map { "\(owner!)\($0.lapsed ? " lapsed" : "")" } ?? "none"),
            "upstream: \(upstream.current) sent \(upstream.sent.keys.sorted())",
            "period: \(period)\(lapsedUnreleased ? " (a lease lapsed)" : "")",
        ]
        for (i, lane) in laneStates.enumerated() {
            parts.append("s\(i): " + (lane.inCall ? lane.trace.joined(separator: ",") + " @" + (lane.parked?.op ?? "?") : "idle"))
        }
        return parts.joined(separator: "; ")
    }
}

/// What an exploration found.
struct RefreshExploration {
    var states = 0
    var deepest = 0
    /// Every step's answer some lane met (`take:lapsed`, `set:lapsed`, `answer:dropped`...):
    /// what shows the paths reach the routes the invariants are about.
    var reached: Set<String> = []
    /// The first invariant broken, with the path that broke it.
    var violation: (invariant: RefreshInvariant, path: [RefreshStep], state: String)?
}

/// The explorer: every path of steps up to `depth`, with at most `faults` faults and `lapses`
/// lapses, each instance calling `refresh` at most `calls` times.
struct RefreshExplorer {
    var depth = 14
    var faults = 1
    var lapses = 1
    var calls = 2
    var plant: RefreshPlant?

    /// The steps possible after `path`, in a world that ran it.
    func successors(of path: [RefreshStep], in world: RefreshWorld) -> [RefreshStep] {
        let faultsUsed = path.filter {
            switch $0 {
            case .grant(_, let grant): grant.isFault
            case .crash: true
            default: false
            }
        }.count
        let faultsLeft = faultsUsed < faults
        var steps: [RefreshStep] = []
        for (i, lane) in world.lanes.lanes.enumerated() {
            if !lane.inCall {
                if path.filter({ $0 == .start(i) }).count < calls { steps.append(.start(i)) }
                continue
            }
            guard let op = lane.parked?.op else { continue }
            let grants: [RefreshGrant] = switch op {
            case "send": [.sent, .notSent]
            case "answer": [.ok, .dropped, .timedOut]
            case "get": [.proceed, .down]
            default: [.proceed, .down, .lostReply]
            }
            steps += grants.filter { faultsLeft || !$0.isFault }.map { .grant(i, $0) }
            if faultsLeft { steps.append(.crash(i)) }
        }
        if path.filter({ $0 == .lapse }).count < lapses { steps.append(.lapse) }
        return steps
    }

    /// Runs `path` in a new world, checking the invariants after its last step; returns the
    /// world (to describe, then tear down) and the invariant broken, if any.
    func run(_ path: [RefreshStep]) async throws -> (RefreshWorld, RefreshInvariant?) {
        let world = try await RefreshWorld(plant: plant)
        var broken: RefreshInvariant?
        for step in path {
            let before = await world.stored()
            await world.take(step)
            broken = await check(world, before: before)
        }
        return (world, broken)
    }

    func check(_ world: RefreshWorld, before: UpstreamTokens?) async -> RefreshInvariant? {
        let upstream = world.upstream.now
        if upstream.sent.values.contains(where: { $0 > 1 }) { return .sentOnce }
        let stored = await world.stored()
        if let stored, upstream.sent[stored.refresh] != nil, world.backend.leases[world.leaseName] == nil { return .spentFencedOff }
        if before != nil, stored == nil, upstream.sent.isEmpty, !world.lapsedUnreleased { return .endedOnlyWhenSpent }
        return nil
    }

    /// Explores breadth first; stops at the first invariant broken.
    func explore() async throws -> RefreshExploration {
        var found = RefreshExploration()
        var seen: Set<String> = []
        var frontier: [[RefreshStep]] = [[]]
        let (root, _) = try await run([])
        seen.insert(await root.describe())
        var successors: [[RefreshStep]: [RefreshStep]] = [[]: self.successors(of: [], in: root)]
        await root.tearDown()
        found.states = 1
        for level in 1...depth {
            var next: [[RefreshStep]] = []
            var nextSuccessors: [[RefreshStep]: [RefreshStep]] = [:]
            for path in frontier {
                for step in successors[path] ?? [] {
                    let extended = path + [step]
                    let (world, broken) = try await run(extended)
                    let state = await world.describe()
                    if let broken {
                        await world.tearDown()
                        found.violation = (broken, extended, state)
                        return found
                    }
                    for lane in world.lanes.lanes { found.reached.formUnion(lane.trace) }
                    if seen.insert(state).inserted {
                        found.states += 1
                        found.deepest = level
                        next.append(extended)
                        nextSuccessors[extended] = self.successors(of: extended, in: world)
                    }
                    await world.tearDown()
                }
            }
            frontier = next
            successors = nextSuccessors
            if frontier.isEmpty { break }
        }
        return found
    }
}
