// The session explorer: a model checker of the session engine. Two processes (each a stack with
// its own handle on one store, as an app and its extension, or two app processes) share a
// simulated key-value store, secret store and lock directory, and a simulated server that rotates
// refresh tokens. The explorer drives the real engine (the machine, the save plan and its runner,
// the refresh loop and its lease) through every sequence of a bounded set of events, breadth
// first, up to a depth, merging paths that reach the same state, and checks seven invariants after
// every step. Nothing here is a copy of the engine: only the stores and the server are simulated.
//
// A refresh in flight is a real call of `refreshSession`: the events that follow it in a path run
// while its request is out (inside the refresh closure), until an `answer` event gives the
// server's answer. One request is out at a time; while it is, the other process may start a
// refresh of its own, which waits for its turn on the lease (`LeaseGate` holds it there) and runs
// once the answer came. And a second refresh on a stack whose refresh is out or waiting joins
// that flight, and waits for its answer (so two refreshes wait at once: one at the lease, one on
// a flight).
//
// A state is replayed from the start for each of its successors (the engine's state can't be
// copied), and identified by a canonical description: the stores' bytes, each stack's accounts
// and what it knows of the store, the leases, the server, and the checker's own history, with
// tokens and pairing identifiers renamed in order of appearance.

import Foundation
@testable import Habitat
@testable import HabitatPersistence
import HabitatPersistenceTesting
import Testing

typealias ExplorerStack = EnvironmentStack<AccountsApp>
typealias ExplorerStore = SessionStore<AccountsApp>

/// What happens next, in a path the explorer drives.
enum ExplorerEvent: Hashable, CustomStringConvertible {
    /// Process `p` signs Ada in, with a new token from the server.
    case login(Int)
    /// Process `p` adds Grace's account (she becomes active).
    case addAccount(Int)
    /// Process `p` switches to its first other account.
    case switchAccount(Int)
    /// Process `p` signs its active account out.
    case logout(Int)
    /// Process `p` signs every account out.
    case logoutAll(Int)
    /// Process `p` sees the store change (its follower's check).
    case follow(Int)
    /// Process `p` starts refreshing its active account; the request is out until `answer`.
    case refresh(Int)
    /// The server's answer to the refresh in flight.
    case answer(ExplorerAnswer)
    /// The device locks: the secret store can't be read or written.
    case lock
    /// The device unlocks, and every process is told (`protectedDataDidBecomeAvailable(for:)`).
    case unlock
    /// Process `p` is killed after `writes` more writes to the stores (the next save dies there),
    /// then relaunched: a new stack restores from the store.
    case kill(Int, afterWrites: Int)

    /// The event `description` names (a recorded trace's line).
    init?(_ text: String) {
        let events: [ExplorerEvent] = [0, 1].flatMap { p in
            [.login(p), .addAccount(p), .switchAccount(p), .logout(p), .logoutAll(p), .follow(p), .refresh(p)] + (0...3).map { .kill(p, afterWrites: $0) }
        } + ExplorerAnswer.allCases.map(ExplorerEvent.answer) + [.lock, .unlock]
        guard let event = events.first(where: { $0.description == text }) else { return nil }
        self = event
    }

    var description: String {
        switch self {
        case .login(let p): "p\(p).login"
        case .addAccount(let p): "p\(p).addAccount"
        case .switchAccount(let p): "p\(p).switch"
        case .logout(let p): "p\(p).logout"
        case .logoutAll(let p): "p\(p).logoutAll"
        case .follow(let p): "p\(p).follow"
        case .refresh(let p): "p\(p).refresh"
        case .answer(let answer): "answer(\(answer))"
        case .lock: "lock"
        case .unlock: "unlock"
        case .kill(let p, let writes): "p\(p).kill(after: \(writes) writes)"
        }
    }
}

/// How the server answers a refresh.
enum ExplorerAnswer: Hashable, CaseIterable, CustomStringConvertible {
    /// The request reached the server, and its answer came back.
    case ok
    /// The request reached the server (which rotated the token), and the answer was lost: a
    /// timeout.
    case dropped
    /// The request never left (no connection).
    case notSent

    var description: String {
        switch self {
        case .ok: "ok"
        case .dropped: "dropped"
        case .notSent: "notSent"
        }
    }
}

/// The six promises the explorer checks.
enum ExplorerInvariant: String, CaseIterable, CustomStringConvertible {
    case tokenSentOnce = "(a) a refresh token is sent upstream at most once"
    case logoutStays = "(b) a logout is undone only by a login"
    case ownTokens = "(c) no session pairs one account's user with another's token"
    case savesKept = "(d) a save whose flush returned is never lost"
    case followAgrees = "(e) stack and store agree once a follow settles"
    case relaunchWhole = "(f) a relaunch after a kill restores the last save or the one it was making, never a mix"
    case noSendAfterSignOut = "(g) no token is sent once its session's sign-out was saved"

    var description: String { rawValue }
}

/// A rule broken on purpose, to show that the invariant it guards catches it.
enum ExplorerPlant: CaseIterable {
    /// The lock directory loses the lease that marks a token spent (someone cleans it).
    case leaseMarksLost
    /// A stack says it took the store's accounts when a save merged them, without taking them.
    case adoptsWithoutTaking
    /// Taking the store's accounts pairs the active user with another account's token.
    case adoptsCrossedTokens
    /// The key-value store acknowledges the snapshot's write and drops it.
    case storeDropsSnapshot
    /// A follower records the store as known before it takes it.
    case followerKnowsFirst
    /// A kill loses the secret store's writes of the save it interrupted (secrets not durable).
    case secretsLostInCrash
    /// A stack forgets what it knew the store held before it refreshes.
    case forgetsKnowledge

    /// The invariant the plant breaks.
    var breaks: ExplorerInvariant {
        switch self {
        case .leaseMarksLost: .tokenSentOnce
        case .adoptsWithoutTaking: .logoutStays
        case .adoptsCrossedTokens: .ownTokens
        case .storeDropsSnapshot: .savesKept
        case .followerKnowsFirst: .followAgrees
        case .secretsLostInCrash: .relaunchWhole
        case .forgetsKnowledge: .noSendAfterSignOut
        }
    }
}

/// Where a process's writes stop: after `writesLeft` more, it is dead and every call throws.
final class ProcessLife: @unchecked Sendable {
    // Safe: every property is read and written only with `lock` held.
    private let lock = NSCondition()
    private var writesLeft: Int?
    private var dead = false
    /// The thread that holds the stores (`holding(_:)`); other threads' reads and writes wait.
    private var holder: pthread_t?
    /// The secrets this process wrote since it was armed, with what they replaced (for
    /// `ExplorerPlant.secretsLostInCrash`).
    private var secretWrites: [(key: String, previous: Data?)] = []

    var isDead: Bool { lock.withLock { dead } }
    var armed: Int? { lock.withLock { writesLeft } }

    func arm(afterWrites writes: Int) { lock.withLock { writesLeft = writes } }

    /// Runs `body` while this process's saves wait: a change's autosave starts only once the
    /// explorer has read what the change made (read after, it was sometimes what the save had
    /// merged already, and the same path reached two states).
    func holding<R>(_ body: () -> R) -> R {
        lock.withLock { holder = pthread_self() }
        defer {
            lock.withLock { holder = nil }
            lock.broadcast()
        }
        return body()
    }

    /// Waits while another thread holds the stores. Called with `lock` held.
    private func waitForHolder() {
        while let holder, pthread_equal(holder, pthread_self()) == 0 { lock.wait() }
    }

    /// Throws when the process is dead.
    func read() throws(StoreError) {
        lock.lock()
        defer { lock.unlock() }
        waitForHolder()
        if dead { throw .unavailable(key: "process", reason: "killed") }
    }

    /// Counts a write; throws (and the write is not made) once the process is dead.
    func write(secret key: String? = nil, previous: Data?? = nil) throws(StoreError) {
        lock.lock()
        defer { lock.unlock() }
        waitForHolder()
        if dead { throw .unavailable(key: "process", reason: "killed") }
        guard let left = writesLeft else { return }
        if left == 0 {
            dead = true
            throw .unavailable(key: "process", reason: "killed")
        }
        writesLeft = left - 1
        if let key, let previous { secretWrites.append((key, previous)) }
    }

    /// The secret writes made since the process was armed, newest first.
    func writesToLose() -> [(key: String, previous: Data?)] { lock.withLock { secretWrites.reversed() } }
}

/// A process's handle on the shared key-value store.
struct MortalKeyValueStore: KeyValueStore {
    let base: MockKeyValueStore
    let life: ProcessLife
    let dropsSnapshot: Bool

    func data(forKey key: String) throws(StoreError) -> Data? {
        try life.read()
        return try base.data(forKey: key)
    }

    func write(_ changes: [String: Data?]) throws(StoreError) {
        try life.write()
        if dropsSnapshot, changes.keys.contains("habitat.session") { return }
        try base.write(changes)
    }

    func keys() throws(StoreError) -> [String] {
        try life.read()
        return try base.keys()
    }
}

/// The secret store's writes not yet on disk: a save's tidying writes (`TidyingSecretStore`),
/// until the next durable write flushes the directory. A kill loses the killed process's.
final class UnflushedWrites: @unchecked Sendable {
    // Safe: `writes` is read and written only with `lock` held.
    private let lock = NSLock()
    private var writes: [(process: ObjectIdentifier, key: String, previous: Data?)] = []

    func record(_ process: ProcessLife, key: String, previous: Data?) {
        lock.withLock { writes.append((ObjectIdentifier(process), key, previous)) }
    }

    /// A durable write flushed the directory: every write before it is on disk.
    func flushed() { lock.withLock { writes.removeAll() } }

    /// Takes `process`'s writes off the list, newest first: what its crash undoes.
    func lost(by process: ProcessLife) -> [(key: String, previous: Data?)] {
        lock.withLock {
            let lost = writes.filter { $0.process == ObjectIdentifier(process) }.reversed().map { ($0.key, $0.previous) }
            writes.removeAll { $0.process == ObjectIdentifier(process) }
            return lost
        }
    }
}

/// A process's handle on the shared secret store. Its tidying writes stay off the disk until
/// the next durable write, as a file secret store's do: a kill before that undoes them.
struct MortalSecretStore: TidyingSecretStore {
    let base: MockSecretStore
    let life: ProcessLife
    let unflushed: UnflushedWrites

    func secret(forKey key: String) throws(StoreError) -> Data? {
        try life.read()
        return try base.secret(forKey: key)
    }

    func setSecret(_ secret: Data?, forKey key: String) throws(StoreError) {
        let previous: Data? = (try? base.secret(forKey: key)) ?? nil
        try life.write(secret: key, previous: .some(previous))
        try base.setSecret(secret, forKey: key)
        unflushed.flushed()
    }

    func setSecretTidying(_ secret: Data?, forKey key: String) throws(StoreError) {
        let previous: Data? = (try? base.secret(forKey: key)) ?? nil
        try life.write(secret: key, previous: .some(previous))
        try base.setSecret(secret, forKey: key)
        unflushed.record(life, key: key, previous: previous)
    }
}

/// A server that rotates refresh tokens: each token it accepts is replaced, and counted.
struct ExplorerServer {
    var current: [String: String] = [:]
    var sent: [String: Int] = [:]
    var serial = 0
    /// Each rotated token's predecessor.
    var rotatedFrom: [String: String] = [:]

    /// The token a session signed in with, for `token` or one rotated from it.
    func signIn(of token: String) -> String {
        var token = token
        while let previous = rotatedFrom[token] { token = previous }
        return token
    }

    mutating func signIn(_ member: Member) -> AuthToken {
        serial += 1
        let token = memberToken(member, serial)
        current[member.id] = token.secret
        return token
    }

    /// Receives `token`: the next one when it is the account's current token, else `nil`.
    mutating func refresh(_ token: AuthToken) -> AuthToken? {
        sent[token.secret, default: 0] += 1
        let account = owner(of: token)
        guard current[account] == token.secret else { return nil }
        let next = signIn(Member(id: account, name: account))
        rotatedFrom[next.secret] = token.secret
        return next
    }
}

/// A process's pause between two looks at a refresh lease another holds: 10 ms, but for the
/// waiting refresh the explorer runs (`ExplorerEvent.refresh` while another's request is out),
/// which parks there until the explorer lets it look again, so that every run of a path
/// interleaves the same way.
final class LeaseGate: @unchecked Sendable {
    // Safe: both properties are read and written only with `lock` held.
    private let lock = NSLock()
    private var controlled = false
    private var parked: CheckedContinuation<Void, any Error>?

    var isParked: Bool { lock.withLock { parked != nil } }

    /// From now on, a pause parks until `release(cancel:)`.
    func control() { lock.withLock { controlled = true } }

    func pause() async throws {
        guard lock.withLock({ controlled }) else { return try await Task.sleep(for: .milliseconds(10)) }
        try await withCheckedThrowingContinuation { continuation in lock.withLock { parked = continuation } }
    }

    /// Lets the parked refresh look at the lease again, or (`cancel`) give up waiting.
    func release(cancel: Bool) {
        let parked: CheckedContinuation<Void, any Error>? = lock.withLock {
            defer { self.parked = nil }
            return self.parked
        }
        if cancel { parked?.resume(throwing: CancellationError()) } else { parked?.resume() }
    }
}

/// A refresh waiting for its turn on the lease while another process's request is out.
struct ExplorerWaiter {
    var process: Int
    /// Its process's gate (a relaunch makes a new process).
    var gate: LeaseGate
    var task: Task<Void, Never>
    /// The token it refreshes.
    var token: String?
    /// The tokens it sent (its answers are lost: the explorer's server counts them once it ends).
    var sends: LockedBox<[String]>
    var done: LockedBox<Bool>
}

/// One process: its stack and its handle on the stores.
final class ExplorerProcess {
    let life = ProcessLife()
    let gate = LeaseGate()
    let sessions: ExplorerStore
    let stack = EnvironmentStack(HabitatEnvironment<AccountsApp>(services: MemberServices(), now: { fixedDate }))

    init(_ world: ExplorerWorld) {
        var sessions = SessionStore<AccountsApp>(
            store: MortalKeyValueStore(base: world.values, life: life, dropsSnapshot: world.plant == .storeDropsSnapshot),
            secrets: MortalSecretStore(base: world.secrets, life: life, unflushed: world.unflushed),
            lockFile: world.directory.appendingPathComponent("lock")
        )
        sessions.pairIDs = world.pairIDs
        let gate = self.gate
        // NB: a lease of an hour: the explorer's processes share one pid, so a lease lapses only where
        // the explorer says (a lost answer marks it at once); a minute's lease lapsed on the clock
        // when a slow machine starved a run, and ended sessions no path had ended (seen in CI).
        sessions.lock = SessionLock(path: sessions.lockFile?.path, leaseDuration: .seconds(3600), pause: { try await gate.pause() })
        self.sessions = sessions
        let stack = self.stack
        stack.restoreAtLaunch(from: sessions)
        if world.plant == .adoptsWithoutTaking || world.plant == .adoptsCrossedTokens {
            let plant = world.plant
            stack.autosave.enable(.init(
                sessions: sessions, onError: { _ in },
                read: { [weak stack] in stack?.filledRoot.topEnvironment },
                adopt: { [weak stack] stored, others, replacing in
                    guard let stack else { return false }
                    if plant == .adoptsWithoutTaking { return true }
                    var crossed = stored
                    if let other = others.first { crossed?.token = other.token }
                    return stack.adoptStoredSession(crossed, others: others, replacing: replacing)
                }
            ))
        } else {
            stack.enableAutosave(to: sessions)
        }
    }

    /// The accounts the stack holds, as the checker compares them.
    var accounts: ExplorerAccounts { ExplorerAccounts(stack.current.session, stack.current.otherAccounts) }
}

/// Accounts as the checker compares them: the active one's name and token, and the others'.
struct ExplorerAccounts: Equatable, CustomStringConvertible {
    var active: String?
    var all: [String: String]

    init(_ active: UserSession<Member>?, _ others: [UserSession<Member>]) {
        self.active = active.map(\.user.id)
        all = [:]
        for session in (active.map { [$0] } ?? []) + others {
            all[session.user.id] = session.state == .awaitingToken ? "awaiting" : session.token.secret
        }
    }

    var isAwaiting: Bool { all.values.contains("awaiting") }

    /// Whether these accounts, restored after a save from `before` (what the store held) to
    /// `after` (what the stack held) was interrupted, mix nothing and lose nothing: each account
    /// has the token it had in one of the two, every account both have is there, and the active
    /// account is one of theirs, or none. (A save merges the accounts other processes signed in,
    /// so some may come from each; an account signed out may be gone before the rest is
    /// written, as a save deletes such tokens first.)
    func isWhole(before: ExplorerAccounts, after: ExplorerAccounts) -> Bool {
        all.allSatisfy { before.all[$0.key] == $0.value || after.all[$0.key] == $0.value }
            && before.all.keys.allSatisfy { after.all[$0] == nil || all[$0] != nil }
            && (active == nil || active == before.active || active == after.active)
    }

    var description: String {
        "active \(active ?? "-"), " + all.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
    }
}

/// One run of a path: the shared stores and server, the processes, and the checker's history.
final class ExplorerWorld {
    let values = MockKeyValueStore()
    let secrets = MockSecretStore()
    let unflushed = UnflushedWrites()
    let directory: URL
    let plant: ExplorerPlant?
    let pairIDs: @Sendable () -> String
    var server = ExplorerServer()
    var processes: [ExplorerProcess] = []
    /// The refresh in flight: its process and token.
    var inFlight: (process: Int, token: String)?
    /// Another process's refresh, waiting for its turn while that one is out.
    var waiter: ExplorerWaiter?
    /// A second refresh on the stack of the refresh in flight or waiting: it joined that flight.
    var joiner: ExplorerWaiter?
    /// The waiting refreshes of processes killed meanwhile, ending.
    private var killedWaiters: [Task<Void, Never>] = []
    var locked = false
    /// The sessions whose end was saved, by the token each signed in with: none may come back,
    /// under any token rotated from it.
    var signedOut: Set<String> = []
    var violations: [(ExplorerInvariant, String)] = []

    /// What the path still has to run, and what the run found at its end.
    private var path: ArraySlice<ExplorerEvent> = []
    private(set) var ending: (key: String, enabled: [ExplorerEvent])?

    init(directory: URL, plant: ExplorerPlant?) throws {
        self.directory = directory
        self.plant = plant
        // A new lock directory's contents for every run: only the leases live there.
        for file in try FileManager.default.contentsOfDirectory(atPath: directory.path) {
            try FileManager.default.removeItem(at: directory.appendingPathComponent(file))
        }
        let serial = LockedBox(0)
        pairIDs = { serial.withLock { $0 += 1; return "pair-\($0)" } }
        processes = [ExplorerProcess(self), ExplorerProcess(self)]
    }

    /// A reader of the shared stores that never deletes what it finds.
    private lazy var observer = SessionStore<AccountsApp>(store: values, secrets: secrets, discardsUnpairedSecrets: false)

    /// What the store holds, as the stacks would load it.
    func stored() -> ExplorerAccounts? {
        let snapshot: SessionSnapshot<AccountsApp>?
        do throws(SnapshotError) {
            snapshot = try observer.load()
        } catch {
            return nil
        }
        return ExplorerAccounts(snapshot?.session, snapshot?.otherAccounts ?? [])
    }

    /// Runs `path`, then checks the invariants and describes the state it reached.
    func run(_ path: [ExplorerEvent]) async {
        self.path = path[...]
        while let event = self.path.popFirst() { await apply(event) }
        end()
        await finishWaiter(cancel: true)   // the path ended with it waiting: nothing after is checked
        await finishJoiner(cancel: true)
        for task in killedWaiters { await task.value }
    }

    private func end() {
        guard ending == nil else { return }
        checkAlways()
        ending = (key(), enabled())
    }

    private func apply(_ event: ExplorerEvent) async {
        switch event {
        case .login(let p):
            await act(p) { world, stack in stack.login(user: .ada, token: world.server.signIn(.ada)) }
        case .addAccount(let p):
            await act(p) { world, stack in stack.addAccount(user: .grace, token: world.server.signIn(.grace)) }
        case .switchAccount(let p):
            await act(p) { _, stack in
                if let other = stack.current.otherAccounts.first { try? stack.switchAccount(to: other.user.id) }
            }
        case .logout(let p): await act(p) { _, stack in _ = stack.logout() }
        case .logoutAll(let p): await act(p) { _, stack in _ = stack.logoutAll() }
        case .follow(let p):
            let process = processes[p]
            if plant == .followerKnowsFirst { process.stack.autosave.knowledge = try? process.sessions.storedPair() }
            process.stack.takeStoredSessionIfChanged(in: process.sessions)
            // NB: a stack whose last save failed holds a change the store doesn't have yet.
            if !locked, process.stack.autosave.lastFailure == nil, let stored = stored(), !stored.isAwaiting, process.accounts != stored {
                violations.append((.followAgrees, "p\(p) holds \(process.accounts), the store \(stored)"))
            }
        case .refresh(let p) where inFlight?.process == p || waiter?.process == p: await startJoiner(p)   // see enabled()
        case .refresh(let p) where inFlight != nil: await startWaiter(p)
        case .refresh(let p): await refresh(p)
        case .answer: Issue.record("an answer with no refresh in flight")
        case .lock:
            locked = true
            secrets.setUnavailable(true)
        case .unlock:
            locked = false
            secrets.setUnavailable(false)
            for (p, process) in processes.enumerated() where !process.life.isDead {
                let before = stored()
                let failed = process.stack.autosave.lastFailure != nil
                process.stack.protectedDataDidBecomeAvailable(for: process.sessions)
                await settle(p, before: before, intended: process.accounts, saving: failed)
            }
        case .kill(let p, let writes): processes[p].life.arm(afterWrites: writes)
        }
    }

    /// Runs `change` on process `p`'s stack, lets autosave finish, and checks what a finished
    /// save promises.
    private func act(_ p: Int, _ change: (ExplorerWorld, ExplorerStack) -> Void) async {
        let process = processes[p]
        let before = stored()
        let held = process.accounts
        let failed = process.stack.autosave.lastFailure != nil
        let intended = process.life.holding {
            change(self, process.stack)
            return process.accounts
        }
        let saved = await settle(p, before: before, intended: intended, saving: failed || intended != held)
        if saved { endSessions(held, leaving: intended) }
    }

    /// Records the sessions of `held` that `now` no longer holds as ended.
    private func endSessions(_ held: ExplorerAccounts, leaving now: ExplorerAccounts) {
        for (name, token) in held.all where token != "awaiting" && now.all[name] == nil {
            signedOut.insert(server.signIn(of: token))
        }
    }

    /// Waits for process `p`'s saves. When they failed because the process was killed, relaunches
    /// it and checks what it restored; when they succeeded, checks the store holds what the stack
    /// holds. Returns whether the saves succeeded.
    @discardableResult
    private func settle(_ p: Int, before: ExplorerAccounts?, intended: ExplorerAccounts?, saving: Bool) async -> Bool {
        let process = processes[p]
        await process.stack.flushAutosave()
        if process.life.isDead {
            guard inFlight?.process != p else { return false }   // relaunched once its refresh unwinds
            await relaunch(p, before: before, intended: intended)
            return false
        }
        guard process.stack.autosave.lastFailure == nil else { return false }
        if saving, !locked, let stored = stored(), !stored.isAwaiting, !process.accounts.isAwaiting, process.accounts != stored {
            violations.append((.savesKept, "p\(p) saved \(process.accounts), the store holds \(stored)"))
        }
        return true
    }

    /// Relaunches the killed process `p`. `before` is what the store held before the event whose
    /// save the kill interrupted, `intended` what that save was writing (`nil` when the checker
    /// can't tell: a refresh's).
    private func relaunch(_ p: Int, before: ExplorerAccounts?, intended: ExplorerAccounts?) async {
        if plant == .secretsLostInCrash {
            for (key, previous) in processes[p].life.writesToLose() { try? secrets.setSecret(previous, forKey: key) }
        }
        // A refresh of the killed process waiting for its turn dies with it.
        if let waiter, waiter.process == p {
            waiter.gate.release(cancel: true)
            killedWaiters.append(waiter.task)
            self.waiter = nil
        }
        // So does a refresh that joined one of its flights: it ends before the path goes on (a
        // flight that failed would have it lead: it gives up its wait for the lease, and sends
        // nothing, its process being dead).
        if joiner?.process == p { await finishJoiner(cancel: true, counting: true) }
        // The killed process's tidying writes that no durable write flushed are lost.
        for (key, previous) in unflushed.lost(by: processes[p].life) { try? secrets.setSecret(previous, forKey: key) }
        let process = ExplorerProcess(self)
        processes[p] = process
        let restored = process.accounts
        if !locked, let before, let intended, !restored.isAwaiting, !restored.isWhole(before: before, after: intended) {
            violations.append((.relaunchWhole, "p\(p) relaunched with \(restored); it was saving \(intended), the store held \(before)"))
        }
    }

    /// Process `p` refreshes its active account; the path's next events run while the request
    /// is out, until an `answer`.
    private func refresh(_ p: Int) async {
        let process = processes[p]
        guard process.stack.current.session != nil else { return }
        var held = process.accounts
        var failed = process.stack.autosave.lastFailure != nil
        if plant == .forgetsKnowledge { process.stack.autosave.knowledge = nil }
        _ = try? await process.stack.refreshSession { session throws(URLError) -> SessionRefresh<Member> in
            checkSend(session.token.secret, by: p)
            inFlight = (p, session.token.secret)
            defer { inFlight = nil }
            while let event = path.popFirst() {
                guard case .answer(let answer) = event else {
                    await apply(event)
                    continue
                }
                held = processes[p].accounts
                failed = processes[p].stack.autosave.lastFailure != nil
                switch answer {
                case .notSent: return .notSent
                case .ok: return server.refresh(session.token).map { .refreshed(token: $0) } ?? .ended
                case .dropped:
                    _ = server.refresh(session.token)
                    throw URLError(.timedOut)
                }
            }
            // The path ends with the request out: the state is described here, and the run
            // unwinds (what follows isn't checked).
            end()
            return .notSent
        }
        // The flight landed: a refresh that joined it takes its answer now, before anything else.
        if joiner?.process == p { await finishJoiner(cancel: ending != nil) }
        guard ending == nil else { return }
        if plant == .leaseMarksLost {
            for file in (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? [] where file.contains(".refresh") {
                try? FileManager.default.removeItem(at: directory.appendingPathComponent(file))
            }
        }
        let now = processes[p].accounts
        if await settle(p, before: nil, intended: nil, saving: failed || now != held) { endSessions(held, leaving: now) }
        await finishWaiter(cancel: false)
    }

    /// The promise checked when a token is sent (invariant (g)).
    private func checkSend(_ token: String, by p: Int) {
        if signedOut.contains(server.signIn(of: token)) {
            violations.append((.noSendAfterSignOut, "p\(p) sent \(token), of a session whose sign-out was saved"))
        }
    }

    /// Process `p` refreshes while another's request is out: its refresh runs until it waits for
    /// its turn on the lease (or ends without one), and the path goes on.
    private func startWaiter(_ p: Int) async {
        let process = processes[p]
        if plant == .forgetsKnowledge { process.stack.autosave.knowledge = nil }
        process.gate.control()
        waiter = Self.refreshInBackground(process, p)
        await waitForWaiter()
        if waiter?.done.withLock({ $0 }) == true { await finishWaiter(cancel: false) }
    }

    /// Process `p` refreshes again while its refresh is out or waiting: the new refresh runs until
    /// it joins that flight (or ends without joining), and the path goes on.
    private func startJoiner(_ p: Int) async {
        let process = processes[p]
        guard let token = process.stack.current.session?.token.secret else { return }
        let (stack, joiner) = (process.stack, Self.refreshInBackground(process, p))
        self.joiner = joiner
        let deadline = ContinuousClock.now + .seconds(60)
        while (stack.refreshes.waiterCount(token: token) ?? 0) == 0, !joiner.done.withLock({ $0 }) {
            guard ContinuousClock.now < deadline else {
                Issue.record("p\(p)'s second refresh neither joins nor ends")
                return
            }
            try? await Task.sleep(for: .milliseconds(1))
        }
        if joiner.done.withLock({ $0 }) { await finishJoiner(cancel: false) }
    }

    /// A refresh of process `p`'s active account, in a task of its own: its request is lost (the
    /// server counts what it sent once it ends).
    private static func refreshInBackground(_ process: ExplorerProcess, _ p: Int) -> ExplorerWaiter {
        let (stack, life, sends, done) = (process.stack, process.life, LockedBox<[String]>([]), LockedBox(false))
        let task = Task {
            _ = try? await stack.refreshSession { session throws(URLError) -> SessionRefresh<Member> in
                // A killed process sends nothing: its request never leaves.
                guard !life.isDead else { throw URLError(.cannotConnectToHost) }
                sends.withLock { $0.append(session.token.secret) }
                throw URLError(.timedOut)
            }
            done.withLock { $0 = true }
        }
        return ExplorerWaiter(process: p, gate: process.gate, task: task, token: stack.current.session?.token.secret, sends: sends, done: done)
    }

    /// Waits for the joined refresh to take its flight's answer (with `cancel`, a turn on the
    /// lease it waits for is given up), and counts what it sent, if it led a flight of its own
    /// (unless the path ended: `counting`).
    private func finishJoiner(cancel: Bool, counting: Bool? = nil) async {
        guard let joiner else { return }
        self.joiner = nil
        let deadline = ContinuousClock.now + .seconds(60)
        while !joiner.done.withLock({ $0 }) {
            guard ContinuousClock.now < deadline else {
                Issue.record("p\(joiner.process)'s second refresh never ends")
                return
            }
            if joiner.gate.isParked { joiner.gate.release(cancel: cancel) }
            try? await Task.sleep(for: .milliseconds(1))
        }
        await joiner.task.value
        guard counting ?? !cancel else { return }
        for token in joiner.sends.withLock({ $0 }) {
            checkSend(token, by: joiner.process)
            _ = server.refresh(AuthToken(token))
        }
    }

    /// Waits until the waiting refresh is parked at the lease, or has ended.
    private func waitForWaiter() async {
        guard let waiter else { return }
        let deadline = ContinuousClock.now + .seconds(60)
        while !waiter.gate.isParked, !waiter.done.withLock({ $0 }) {
            guard ContinuousClock.now < deadline else {
                Issue.record("p\(waiter.process)'s refresh neither waits nor ends")
                return
            }
            try? await Task.sleep(for: .milliseconds(1))
        }
    }

    /// Lets the waiting refresh take its turn (the request it waited on is answered), runs it to
    /// its end, counts what it sent, and checks its saves; with `cancel`, it gives up instead.
    private func finishWaiter(cancel: Bool) async {
        guard let waiter else { return }
        let p = waiter.process
        let held = processes[p].accounts
        let failed = processes[p].stack.autosave.lastFailure != nil
        waiter.gate.release(cancel: cancel)
        await waitForWaiter()
        if waiter.gate.isParked {
            Issue.record("p\(p)'s refresh waits again for a lease nobody should hold")
            waiter.gate.release(cancel: true)
        }
        await waiter.task.value
        self.waiter = nil
        if joiner?.process == p { await finishJoiner(cancel: cancel) }
        guard !cancel else { return }
        for token in waiter.sends.withLock({ $0 }) {
            checkSend(token, by: p)
            _ = server.refresh(AuthToken(token))
        }
        let now = processes[p].accounts
        if await settle(p, before: nil, intended: nil, saving: failed || now != held) { endSessions(held, leaving: now) }
    }

    /// The invariants that hold in every state.
    private func checkAlways() {
        // NB: a request still out counts: it may have reached the server.
        var sent = server.sent
        if let inFlight { sent[inFlight.token, default: 0] += 1 }
        for (token, count) in sent where count > 1 {
            violations.append((.tokenSentOnce, "\(token) was sent \(count) times"))
        }
        let stored = locked ? nil : self.stored()
        for (name, token) in stored?.all ?? [:] where token != "awaiting" && signedOut.contains(server.signIn(of: token)) {
            violations.append((.logoutStays, "\(name)'s session signed in with \(server.signIn(of: token)) ended, and the store holds it again (\(token))"))
        }
        var holders: [(String, ExplorerAccounts)] = processes.enumerated().map { ("p\($0.offset)", $0.element.accounts) }
        if let stored { holders.append(("the store", stored)) }
        for (holder, accounts) in holders {
            for (name, token) in accounts.all where token != "awaiting" && owner(of: AuthToken(token)) != name {
                violations.append((.ownTokens, "\(holder) pairs \(name) with \(token)"))
            }
        }
    }

    /// The events that may come next.
    private func enabled() -> [ExplorerEvent] {
        if let inFlight {
            var events = ExplorerAnswer.allCases.map(ExplorerEvent.answer)
            events += processes.indices.flatMap { p in basic(p) }
            if waiter == nil {
                for (p, process) in processes.enumerated() where p != inFlight.process && !process.life.isDead
                    && process.stack.current.session.map({ $0.state != .awaitingToken }) == true {
                    events.append(.refresh(p))
                }
            }
            // A second refresh on the stack whose refresh is out, or waits, of the same token: it
            // joins that flight (a kill of its process ends it with the process: `relaunch`).
            if joiner == nil {
                let flights: [(process: Int, token: String?)] = [(inFlight.process, inFlight.token)] + (waiter.map { [($0.process, $0.token)] } ?? [])
                for (p, token) in flights
                where !processes[p].life.isDead && processes[p].stack.current.session.map({ $0.state != .awaitingToken && $0.token.secret == token }) == true {
                    events.append(.refresh(p))
                }
            }
            // A kill while the request is out: it dies at its next write (the answer's save, say).
            if processes[0].life.armed == nil, !processes[0].life.isDead { events += (0...3).map { .kill(0, afterWrites: $0) } }
            events.append(locked ? .unlock : .lock)
            return events
        }
        var events = processes.indices.flatMap { p in basic(p) }
        for (p, process) in processes.enumerated() where process.stack.current.session.map({ $0.state != .awaitingToken }) == true {
            events.append(.refresh(p))
        }
        events.append(locked ? .unlock : .lock)
        if processes[0].life.armed == nil { events += (0...3).map { .kill(0, afterWrites: $0) } }
        return events
    }

    private func basic(_ p: Int) -> [ExplorerEvent] {
        guard !processes[p].life.isDead else { return [] }
        let environment = processes[p].stack.current
        var events: [ExplorerEvent] = [.login(p), .addAccount(p), .follow(p)]
        if !environment.otherAccounts.isEmpty { events.append(.switchAccount(p)) }
        if environment.session != nil { events.append(.logout(p)) }
        if environment.session != nil || !environment.otherAccounts.isEmpty { events.append(.logoutAll(p)) }
        return events
    }

    /// The state, canonically: everything that decides what can happen next and what the
    /// checker will say, with tokens and pairing identifiers renamed in order of appearance.
    private func key() -> String {
        var lines: [String] = []
        lines.append("locked \(locked), in flight \(inFlight.map { "p\($0.process) \($0.token)" } ?? "-"), waiting \(waiter.map { "p\($0.process)" } ?? "-"), joining \(joiner.map { "p\($0.process)" } ?? "-")")
        lines.append("server " + server.current.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " "))
        lines.append("sent " + server.sent.keys.sorted().joined(separator: " "))
        lines.append("signed out " + signedOut.sorted().joined(separator: " "))
        for (key, value) in values.contents.sorted(by: { $0.key < $1.key }) { lines.append("value \(key) \(String(decoding: value, as: UTF8.self))") }
        // NB: read around the mock's lock state: contents, not `secret(forKey:)`.
        lines.append("secrets " + secrets.keys.sorted().joined(separator: " "))
        for key in secrets.keys.sorted() {
            secrets.setUnavailable(false)
            lines.append("secret \(key) \((try? secrets.secret(forKey: key)).flatMap { $0.map { String(decoding: $0, as: UTF8.self) } } ?? "-")")
            secrets.setUnavailable(locked)
        }
        let fingerprints = Dictionary((Array(server.sent.keys) + Array(server.current.values)).map { (SessionLock.fingerprint(of: AuthToken($0)), $0) }, uniquingKeysWith: { first, _ in first })
        for file in ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).sorted() where file.contains(".refresh") {
            let fields = ((try? String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)) ?? "").split(separator: " ")
            guard fields.count == 4, let deadline = Double(fields[2]) else { continue }
            let token = fingerprints[fields[3].trimmingCharacters(in: .whitespacesAndNewlines)] ?? "?"
            lines.append("lease \(file) \(token) \(deadline > Date().timeIntervalSince1970 ? "held" : "lapsed")")
        }
        for (p, process) in processes.enumerated() {
            let known = process.stack.autosave.knowledge.map { "\($0.active ?? "-") \($0.pairID ?? "-") " + $0.others.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value.id)" }.joined(separator: ",") } ?? "-"
            lines.append("p\(p) \(process.accounts) states \(process.stack.current.session?.state.rawValue ?? "-") knows \(known) armed \(process.life.armed.map(String.init) ?? "-") failed \(process.stack.autosave.lastFailure != nil)")
        }
        return Self.canonical(lines.joined(separator: "\n"))
    }

    /// `text` with each token (`ada#3`) and pairing identifier (`pair-7`) renamed by its order
    /// of appearance.
    static func canonical(_ text: String) -> String {
        // NB: a plain loop over the bytes: tests build without optimisation, where slices and
        // generic searches made this the explorer's slowest step.
        var names: [String: String] = [:]
        var result: [UInt8] = []
        let bytes = Array(text.utf8)
        result.reserveCapacity(bytes.count)
        let count = bytes.count
        var index = 0
        while index < count {
            var length = 0
            if index + 5 < count, bytes[index] == 0x70, bytes[index + 1] == 0x61, bytes[index + 2] == 0x69, bytes[index + 3] == 0x72, bytes[index + 4] == 0x2D {
                length = 5   // "pair-"
            } else if index + 4 < count, bytes[index] == 0x61, bytes[index + 1] == 0x64, bytes[index + 2] == 0x61, bytes[index + 3] == 0x23 {
                length = 4   // "ada#"
            } else if index + 6 < count, bytes[index] == 0x67, bytes[index + 1] == 0x72, bytes[index + 2] == 0x61, bytes[index + 3] == 0x63, bytes[index + 4] == 0x65, bytes[index + 5] == 0x23 {
                length = 6   // "grace#"
            }
            var end = index + length
            while length > 0, end < count, bytes[end] >= 0x30, bytes[end] <= 0x39 { end += 1 }
            guard length > 0, end > index + length else {
                result.append(bytes[index])
                index += 1
                continue
            }
            let found = String(decoding: bytes[index..<end], as: UTF8.self)
            let name = names[found] ?? ((length == 5 ? "P" : String(decoding: bytes[index..<index + length], as: UTF8.self)) + String(names.count))
            names[found] = name
            result.append(contentsOf: name.utf8)
            index = end
        }
        return String(decoding: result, as: UTF8.self)
    }
}

/// Explores every path of events up to `depth`, breadth first, merging paths that reach the same
/// state.
struct SessionExplorer {
    var depth: Int
    /// The events explored; every event by default.
    var events: @Sendable (ExplorerEvent) -> Bool = { _ in true }
    var plant: ExplorerPlant?
    /// Stops at the first violation of this invariant (a planted bug's test).
    var stopAt: ExplorerInvariant?
    /// Told what each level found, as it ends (a long exploration's progress).
    var progress: (@Sendable (Report) -> Void)?

    struct Report {
        var states = 0
        var runs = 0
        var depthReached = 0
        var violations: [(invariant: ExplorerInvariant, detail: String, path: [ExplorerEvent])] = []
    }

    func explore() async throws -> Report {
        let directory = try TemporaryDirectory()
        var report = Report()
        var seen: Set<String> = []
        var frontier: [(path: [ExplorerEvent], enabled: [ExplorerEvent])] = []
        let root = try await run([], in: directory, report: &report)
        seen.insert(root.key)
        frontier.append(([], root.enabled.filter(events)))
        report.states = 1
        for level in 1...depth {
            var next: [(path: [ExplorerEvent], enabled: [ExplorerEvent])] = []
            for (path, enabled) in frontier {
                for event in enabled {
                    let path = path + [event]
                    let end = try await run(path, in: directory, report: &report)
                    if let stopAt, report.violations.contains(where: { $0.invariant == stopAt }) { return report }
                    guard seen.insert(end.key).inserted else { continue }
                    next.append((path, end.enabled.filter(events)))
                }
            }
            report.states += next.count
            report.depthReached = level
            progress?(report)
            frontier = next
            if frontier.isEmpty { break }
        }
        return report
    }

    private func run(_ path: [ExplorerEvent], in directory: TemporaryDirectory, report: inout Report) async throws -> (key: String, enabled: [ExplorerEvent]) {
        let world = try ExplorerWorld(directory: directory.url, plant: plant)
        await world.run(path)
        report.runs += 1
        for (invariant, detail) in world.violations where !report.violations.contains(where: { $0.invariant == invariant }) {
            report.violations.append((invariant, detail, path))
        }
        return world.ending!
    }
}
