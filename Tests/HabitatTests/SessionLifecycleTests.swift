import Foundation
import Habitat
@testable import HabitatPersistence
import HabitatPersistenceTesting
import HabitatTesting
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A session that waits for its token while the secret store is unavailable.
@Suite struct AwaitingTokenTests {
    /// Ada's session saved with token "t", and a stack restored from it while the secret store
    /// was locked, autosaving to the same store.
    func lockedLaunch() throws -> (EnvironmentStack<TestApp>, SessionStore<TestApp>, MockSecretStore) {
        let secrets = MockSecretStore()
        let sessions = SessionStore<TestApp>(store: InMemoryStore(), secrets: secrets)
        try sessions.save(makeEnvironment().with(\.session, UserSession(user: .ada, token: AuthToken("t"))))
        secrets.setUnavailable(true)
        let stack = makeStack()
        stack.restoreAtLaunch(from: sessions)
        stack.enableAutosave(to: sessions)
        return (stack, sessions, secrets)
    }

    /// The hazard this state exists for: taken for "logged out", the next autosave would
    /// delete the token. While the session waits, nothing is written; once the token is read,
    /// the change made meanwhile is saved with it.
    @Test func autosaveWhileAwaitingKeepsTheToken() async throws {
        let (stack, sessions, secrets) = try lockedLaunch()
        let writesBefore = secrets.operations.count
        stack.updateConfig { $0.timeout = 7 }
        await stack.flushAutosave()
        #expect(!secrets.operations.contains { if case .delete = $0 { true } else { false } })
        secrets.setUnavailable(false)
        let waiting = try #require(try sessions.load())
        #expect(waiting.config.timeout == 30, "nothing was written while the session waited")
        #expect(waiting.session?.token.secret == "t", "and the snapshot still names its token")
        #expect(secrets.operations.dropFirst(writesBefore).allSatisfy { if case .read = $0 { true } else { false } })

        #expect(stack.protectedDataDidBecomeAvailable(for: sessions) == .restored)
        #expect(stack.current.config.timeout == 7, "the change made while waiting stays")
        await stack.flushAutosave()
        let saved = try #require(try sessions.load())
        #expect(saved.config.timeout == 7, "and is saved once the token is back")
        #expect(saved.session?.token.secret == "t")
    }

    @Test func refreshingWhileTheTokenCantBeReadAsksNothing() async throws {
        let (stack, _, _) = try lockedLaunch()
        let calls = Counter()
        let outcome = await stack.refreshSession { _ in
            calls.increment()
            return .ended
        }
        #expect(outcome == .awaitingToken)
        #expect(calls.value == 0)
        #expect(stack.current.currentUser == .ada, "still signed in")
        let valid = await stack.validSession { _ in .ended }
        #expect(valid == nil, "no usable session yet")
    }

    @Test func aRefreshOnceTheStoreIsReadableReadsTheTokenThenRefreshes() async throws {
        let (stack, sessions, secrets) = try lockedLaunch()
        secrets.setUnavailable(false)
        let refreshedWith = Locked<String?>(nil)
        let outcome = await stack.refreshSession { session in
            refreshedWith.value = session.token.secret
            return .refreshed(token: AuthToken("fresh"))
        }
        #expect(outcome == .refreshed)
        #expect(refreshedWith.value == "t", "the refresh got the token read from the store")
        #expect(stack.current.session?.token.secret == "fresh")
        await stack.flushAutosave()
        #expect(try sessions.load()?.session?.token.secret == "fresh")
    }

    @Test func validSessionCompletesAnAwaitingSession() async throws {
        let (stack, _, secrets) = try lockedLaunch()
        secrets.setUnavailable(false)
        let session = await stack.validSession { _ in .ended }
        #expect(session?.token.secret == "t")
        #expect(session?.state == .restored)
    }

    @Test func loggingOutWhileAwaitingDeletesTheToken() async throws {
        let (stack, sessions, secrets) = try lockedLaunch()
        secrets.setUnavailable(false)
        // The store is readable again, but the stack still waits: an explicit logout wins.
        stack.logout()
        await stack.flushAutosave()
        #expect(try sessions.load()?.session == nil)
        #expect(secrets.keys.isEmpty)
    }
}

/// A token that outlives its snapshot (a Keychain kept across a reinstall) is never used.
@Suite struct UnpairedSecretTests {
    @Test func aTokenWhoseSnapshotIsGoneIsDiscarded() throws {
        let secrets = InMemorySecretStore()
        try SessionStore<TestApp>(store: InMemoryStore(), secrets: secrets)
            .save(makeEnvironment().with(\.session, UserSession(user: .ada, token: AuthToken("before-reinstall"))))
        // Reinstalled: the plain store is new, the secret store is not.
        let reinstalled = SessionStore<TestApp>(store: InMemoryStore(), secrets: secrets)
        #expect(try reinstalled.load() == nil)
        #expect(secrets.keys.isEmpty, "the orphaned token was deleted")
    }

    @Test func discardingCanBeTurnedOff() throws {
        let secrets = InMemorySecretStore()
        try SessionStore<TestApp>(store: InMemoryStore(), secrets: secrets)
            .save(makeEnvironment().with(\.session, UserSession(user: .ada, token: AuthToken("kept"))))
        let reinstalled = SessionStore<TestApp>(store: InMemoryStore(), secrets: secrets, discardsUnpairedSecrets: false)
        #expect(try reinstalled.load() == nil, "still never used")
        #expect(secrets.keys.sorted() == ["habitat.session.token", "habitat.session.token."], "but kept")
    }

    /// A token left beside a logged-out snapshot (a login killed between its two writes) goes
    /// at the next load.
    @Test func aTokenBesideALoggedOutSnapshotIsDiscarded() throws {
        let store = InMemoryStore()
        let secrets = InMemorySecretStore()
        let sessions = SessionStore<TestApp>(store: store, secrets: secrets)
        try sessions.save(makeEnvironment())
        try secrets.setSecret(Data("stray".utf8), forKey: sessions.tokenKey)
        #expect(try sessions.load()?.session == nil)
        #expect(secrets.keys.isEmpty)
    }

    @Test func aSecretStoreThatCantBeReadKeepsItsToken() throws {
        let secrets = MockSecretStore()
        try SessionStore<TestApp>(store: InMemoryStore(), secrets: secrets)
            .save(makeEnvironment().with(\.session, UserSession(user: .ada, token: AuthToken("t"))))
        secrets.setUnavailable(true)
        #expect(try SessionStore<TestApp>(store: InMemoryStore(), secrets: secrets).load() == nil)
        secrets.setUnavailable(false)
        #expect(secrets.keys.sorted() == ["habitat.session.token", "habitat.session.token."], "nothing is deleted on a guess")
    }
}

/// Stacks and processes that share one session store refresh it once.
///
/// NB: the limit is generous because the process tests' wait for one of the two
/// ``BlockingThreads`` counts against it; it only keeps a hang from stalling CI.
@Suite(.timeLimit(.minutes(5))) struct SharedRefreshTests {
    /// No lock of the store's files is held while the server is asked: iOS terminates a
    /// suspended app that holds one in a shared container. The refresh's turn is a lease file.
    @Test(.enabled(if: FileManager.default.fileExists(atPath: "/proc/locks")))
    func noFileLockIsHeldDuringTheServerCall() async throws {
        let directory = try TemporaryDirectory()
        let sessions = try sharedSessions(in: directory.url)
        try sessions.save(makeEnvironment().with(\.session, UserSession(user: .ada, token: AuthToken("old"))))
        let stack = makeStack()
        stack.restoreAtLaunch(from: sessions)
        stack.enableAutosave(to: sessions)
        let files = [sessions.lockFile!.path, sessions.lockFile!.path + ".refresh", directory.file("session.json").path + ".lock"]
        let outcome = await stack.refreshSession { _ in
            let held = try? heldFileLocks(on: files)
            #expect(held == [], "locks held on the store's files during the server call: \(held ?? [])")
            #expect(FileManager.default.fileExists(atPath: files[1]), "the lease is there")
            return .refreshed(token: AuthToken("rotated"))
        }
        #expect(outcome == .refreshed)
        #expect(!FileManager.default.fileExists(atPath: files[1]), "and handed back")
    }

    @Test func aLeaseEndsAtItsDeadlineOrWithItsProcess() {
        let later = Int(Date().timeIntervalSince1970) + 60
        #expect(SessionLock(path: nil).isHeld("\(getpid()) nonce \(later)"), "a live process before its deadline")
        #expect(!SessionLock(path: nil).isHeld("\(getpid()) nonce \(later - 120)"), "past its deadline")
        #expect(!SessionLock(path: nil).isHeld("999999999 nonce \(later)"), "its process is gone")
        #expect(!SessionLock(path: nil).isHeld("garbage"), "not a lease")
        // NB: `kill(0, 0)` and `kill(-1, 0)` signal groups, and succeed: no process is named.
        #expect(!SessionLock(path: nil).isHeld("0 nonce \(later)"), "pid 0 names no process: not a lease")
        #expect(!SessionLock(path: nil).isHeld("-1 nonce \(later)"), "a negative pid names no process: not a lease")
        #expect(!SessionLock(path: nil).isHeld("\(getpid()) nonce \(later + 3_600)"), "a deadline further away than a lease lasts: planted")
    }

    @Test func twoStacksOnOneStoreShareOneRefresh() async throws {
        let directory = try TemporaryDirectory()
        try sharedSessions(in: directory.url).save(makeEnvironment().with(\.session, UserSession(user: .ada, token: AuthToken("old"))))
        // Two parts of an app, each with its own stack and its own handle on the files.
        let stacks = try (0..<2).map { _ in
            let stack = makeStack()
            let sessions = try sharedSessions(in: directory.url)
            stack.restoreAtLaunch(from: sessions)
            stack.enableAutosave(to: sessions)
            return stack
        }
        let calls = Counter()
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<40 {
                group.addTask {
                    _ = await stacks[index % 2].refreshSession { _ in
                        calls.increment()
                        try? await Task.sleep(for: .milliseconds(50))
                        return .refreshed(token: AuthToken("rotated"))
                    }
                }
            }
        }
        #expect(calls.value == 1, "one request to the server, for both stacks")
        #expect(stacks.allSatisfy { $0.current.session?.token.secret == "rotated" })
        #expect(try sharedSessions(in: directory.url).load()?.session?.token.secret == "rotated")
    }

    /// The app's lease is fenced: a refresh slower than its lease can't have its answer taken
    /// (another stack may have taken the token's turn), and the other stack, finding the lapsed
    /// lease naming the same token, doesn't send it either. One upstream call; the session ends.
    @Test func aRefreshSlowerThanItsLeaseSpendsTheTokenOnceAndEndsTheSession() async throws {
        let directory = try TemporaryDirectory()
        func sessions() throws -> SessionStore<TestApp> {
            SessionStore(
                store: try JSONFileStore(url: directory.url.appendingPathComponent("session.json")),
                secrets: try FileSecretStore(directory: directory.url.appendingPathComponent("secrets")),
                refreshLease: .seconds(1)
            )
        }
        try sessions().save(makeEnvironment().with(\.session, UserSession(user: .ada, token: AuthToken("old"))))
        let (slow, other) = (makeStack(), makeStack())
        for stack in [slow, other] {
            stack.restoreAtLaunch(from: try sessions())
            stack.enableAutosave(to: try sessions())
        }
        let sent = LockedBox<[String]>([])
        let started = Gate()
        let first = Task {
            await slow.refreshSession { session in
                sent.withLock { $0.append(session.token.secret) }
                started.open()
                try? await Task.sleep(for: .milliseconds(2_500))
                return .refreshed(token: AuthToken("late"))
            }
        }
        await started.wait()
        try await Task.sleep(for: .milliseconds(1_300))   // the lease has lapsed
        let second = await other.refreshSession { session in
            sent.withLock { $0.append(session.token.secret) }
            return .refreshed(token: AuthToken("second"))
        }
        #expect(second == .endedUnconfirmed(.spentElsewhere))
        #expect(await first.value == .endedUnconfirmed(.leaseLapsed))
        #expect(sent.withLock { $0 } == ["old"], "the token reached the server once")
        #expect(slow.current.session == nil && other.current.session == nil)
        #expect(try sessions().load()?.session == nil, "and no launch restores it")
    }

    /// A lease of no length lapsed before any answer could come: every refresh ended its session
    /// (`.endedUnconfirmed(.leaseLapsed)`). The store's lease is bounded to a second .. a day.
    /// NB: checked on the lease itself: a refresh here may take seconds when the suite's
    /// explorers hold both cores, past any short lease.
    @Test(arguments: [(Duration.zero, 1.0), (.seconds(-5), 1), (.milliseconds(1), 1), (.seconds(90), 90), (.seconds(Int64.max), 86_400)])
    func aLeaseOutOfRangeIsBounded(lease: Duration, lasts seconds: Double) throws {
        let directory = try TemporaryDirectory()
        let sessions = SessionStore<TestApp>(
            store: try JSONFileStore(url: directory.url.appendingPathComponent("session.json")),
            secrets: try FileSecretStore(directory: directory.url.appendingPathComponent("secrets")),
            refreshLease: lease
        )
        #expect(sessions.lock.leaseDuration == seconds)
    }

    /// A refresh that waited for another stack's turn, while its own stack signed out, asks
    /// nothing when its turn comes: the token belongs to a session that ended here.
    @Test func aRefreshWaitingForItsTurnWhileItsStackSignsOutAsksNothing() async throws {
        let directory = try TemporaryDirectory()
        let sessions = try sharedSessions(in: directory.url)
        try sessions.save(makeEnvironment().with(\.session, UserSession(user: .ada, token: AuthToken("old"))))
        let (first, second) = (makeStack(), makeStack())
        for stack in [first, second] {
            stack.restoreAtLaunch(from: try sharedSessions(in: directory.url))
            stack.enableAutosave(to: try sharedSessions(in: directory.url))
        }
        let (started, answer) = (Gate(), Gate())
        let leader = Task {
            await first.refreshSession { _ in
                started.open()
                await answer.wait()
                return .notSent
            }
        }
        await started.wait()
        let asked = LockedBox(false)
        let waiter = Task {
            await second.refreshSession { _ in
                asked.withLock { $0 = true }
                return .refreshed(token: AuthToken("after the sign-out"))
            }
        }
        try await Task.sleep(for: .milliseconds(200))   // the waiter waits for the lease
        second.logout()
        await second.flushAutosave()
        answer.open()
        #expect(await leader.value == .notSent)
        #expect(await waiter.value == .superseded, "the session it was for ended while it waited")
        #expect(!asked.withLock { $0 }, "the signed-out session's token was never sent")
    }

    /// A lease beside the store that can't be trusted (its directory writable by others) can't
    /// keep another process from sending the same token: the refresh asks nothing.
    @Test func aLeaseThatCantBeTrustedRefusesTheRefresh() async throws {
        let directory = try TemporaryDirectory()
        let open = directory.url.appendingPathComponent("shared")
        try FileManager.default.createDirectory(at: open, withIntermediateDirectories: false)
        try FileManager.default.setAttributes([.posixPermissions: 0o777], ofItemAtPath: open.path)
        let sessions = SessionStore<TestApp>(
            store: try JSONFileStore(url: directory.url.appendingPathComponent("session.json")),
            secrets: try FileSecretStore(directory: directory.url.appendingPathComponent("secrets")),
            lockFile: open.appendingPathComponent("session.lock")
        )
        let stack = makeStack()
        stack.login(user: .ada, token: AuthToken("t"))
        stack.enableAutosave(to: sessions)
        let calls = Counter()
        let outcome = await stack.refreshSession { _ in
            calls.increment()
            return .refreshed(token: AuthToken("t2"))
        }
        guard case .refused(.store(.untrustedDirectory(let path, _))) = outcome else {
            Issue.record("expected refused with the untrusted directory, got \(outcome)")
            return
        }
        #expect(path == open.path)
        #expect(calls.value == 0)
        #expect(stack.current.session?.token == AuthToken("t"), "nothing was spent: the session stays")
    }

    @Test(.enabled(if: canRunFixtures))
    func twoProcessesShareOneRefresh() async throws {
        try await offThePool {
            let directory = try TemporaryDirectory()
            try sharedSessions(in: directory.url).save(makeEnvironment().with(\.session, UserSession(user: .ada, token: AuthToken("old"))))
            let (tokens, refreshes) = try refreshTogether(in: directory, ["refresh-together", "refresh-together"])
            #expect(refreshes.count == 1, "one request to the server: \(refreshes)")
            #expect(tokens[0] == tokens[1], "both end with the same token: \(tokens)")
            #expect(tokens[0].hasPrefix("rotated-by-"))
            #expect(try sharedSessions(in: directory.url).load()?.session?.token.secret == tokens[0])
        }
    }

    /// A process refreshing in a loop is killed at random moments, 30 times, and started again:
    /// no refresh token ever reaches the server twice. A kill mid-refresh leaves the lease naming
    /// the token in flight, and the next process ends the session rather than send it again (the
    /// user signs in again: here, a new session is saved). Otherwise the next launch finds the
    /// token of the last refresh it acknowledged, or the one in flight.
    @Test(.enabled(if: canRunFixtures))
    func aKillDuringARefreshNeverSendsATokenTwice() async throws {
        try await offThePool {
            let directory = try TemporaryDirectory()
            let log = directory.url.appendingPathComponent("server.log").path
            _ = FileManager.default.createFile(atPath: log, contents: nil)
            var last: Int?
            var endings = 0
            for round in 1...30 {
                let first = round * 10_000
                if try sharedSessions(in: directory.url).load()?.session == nil {
                    // Signed in again, with a token never sent.
                    try sharedSessions(in: directory.url).save(makeEnvironment().with(\.session, UserSession(user: .ada, token: AuthToken("signed-in-\(round)"))))
                    last = nil
                }
                let process = sessionWorker("refresh-loop", directory.path, "\(first)", log)
                let printed = try killAfterFirstOutput(process, plus: UInt32.random(in: 0..<10_000))
                if printed.hasPrefix("ended") {
                    endings += 1
                    #expect(printed.contains("spentElsewhere"), "round \(round): \(printed)")
                    continue
                }
                let acknowledged = printed.split(separator: "\n").compactMap { $0.hasPrefix("refreshed ") ? Int($0.dropFirst(10)) : nil }.last
                guard let session = try sharedSessions(in: directory.url).load()?.session, session.token.secret.hasPrefix("token-") else { continue }
                let number = try #require(Int(session.token.secret.dropFirst("token-".count)), "kill \(round): \(session.token)")
                let expected = acknowledged ?? last
                #expect(number == expected || number == (acknowledged.map { $0 + 1 } ?? first), "kill \(round): token-\(number), acknowledged \(expected.map(String.init) ?? "none")")
                last = number
            }
            let sent = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n")
            let twice = Dictionary(grouping: sent, by: { $0 }).filter { $0.value.count > 1 }.keys
            #expect(twice.isEmpty, "sent twice: \(twice.sorted())")
            #expect(sent.count >= 10, "the loop refreshed: \(sent.count) sent, \(endings) sessions ended")
        }
    }
}

/// Moving a token from where an earlier version kept it into the secret store.
@Suite struct LegacyTokenMigrationTests {
    let legacy = InMemoryStore(["accessToken": Data("legacy-secret".utf8)])
    let secrets = InMemorySecretStore()
    var sessions: SessionStore<TestApp> { SessionStore(store: InMemoryStore(), secrets: secrets) }

    @Test func theTokenMovesCopiedVerifiedThenDeleted() throws {
        let sessions = sessions
        let stack = makeStack()
        let result = try stack.migrateLegacyToken(from: legacy, key: "accessToken", to: sessions) { .ada }
        #expect(result == .migrated)
        #expect(legacy.contents["accessToken"] == nil, "gone from the legacy store")
        #expect(stack.restoreAtLaunch(from: sessions).snapshot?.session?.token.secret == "legacy-secret")
        #expect(stack.current.currentUser == .ada)
        // Every later launch: nothing to do.
        #expect(try stack.migrateLegacyToken(from: legacy, key: "accessToken", to: sessions) { .grace } == .nothingToMigrate)
        #expect(try sessions.load()?.session?.user == .ada)
    }

    @Test func aTokenStoredAsAJSONStringMovesToo() throws {
        let legacy = InMemoryStore()
        try legacy.set("json-secret", for: StoreKey<String>("accessToken"))
        let sessions = sessions
        #expect(try makeStack().migrateLegacyToken(from: legacy, key: "accessToken", to: sessions) { .ada } == .migrated)
        #expect(try sessions.load()?.session?.token.secret == "json-secret")
    }

    @Test func withoutAUserTheTokenStaysWhereItIs() throws {
        #expect(try makeStack().migrateLegacyToken(from: legacy, key: "accessToken", to: sessions) { nil } == .noUser)
        #expect(legacy.contents["accessToken"] == Data("legacy-secret".utf8))
        #expect(secrets.keys.isEmpty)
    }

    @Test func aSessionSavedSinceMakesTheLegacyTokenStale() throws {
        let sessions = sessions
        try sessions.save(makeEnvironment().with(\.session, UserSession(user: .grace, token: AuthToken("newer"))))
        #expect(try makeStack().migrateLegacyToken(from: legacy, key: "accessToken", to: sessions) { .ada } == .discardedStale)
        #expect(legacy.contents["accessToken"] == nil)
        #expect(try sessions.load()?.session?.token.secret == "newer", "the saved session is untouched")
    }

    @Test func aSecretStoreThatFailsLeavesTheLegacyTokenInPlace() throws {
        let secrets = WriteFailingSecretStore()
        secrets.failing.value = true
        let sessions = SessionStore<TestApp>(store: InMemoryStore(), secrets: secrets)
        #expect(throws: SnapshotError.self) {
            try makeStack().migrateLegacyToken(from: legacy, key: "accessToken", to: sessions) { .ada }
        }
        #expect(legacy.contents["accessToken"] == Data("legacy-secret".utf8))
        // Run again, it finishes the job.
        secrets.failing.value = false
        #expect(try makeStack().migrateLegacyToken(from: legacy, key: "accessToken", to: sessions) { .ada } == .migrated)
        #expect(legacy.contents["accessToken"] == nil)
    }

    @Test func aSecretStoreThatCantBeReadBackLeavesTheLegacyTokenInPlace() throws {
        let secrets = MockSecretStore()
        let sessions = SessionStore<TestApp>(store: InMemoryStore(), secrets: secrets)
        try sessions.save(makeEnvironment().with(\.session, UserSession(user: .ada, token: AuthToken("legacy-secret"))))
        secrets.setUnavailable(true)
        #expect(throws: SnapshotError.store(.unavailable(key: "habitat.session.token.", reason: "the device is locked"))) {
            try makeStack().migrateLegacyToken(from: legacy, key: "accessToken", to: sessions) { .ada }
        }
        #expect(legacy.contents["accessToken"] != nil, "not deleted before it was verified")
    }

    @Test func aLegacyStoreThatCantBeReadMovesNothing() throws {
        let legacy = MockKeyValueStore(["accessToken": Data("legacy-secret".utf8)])
        legacy.failNext(1, with: .unreadable(path: "legacy", reason: "a failure injected by the test"))
        let sessions = sessions
        #expect(throws: SnapshotError.store(.unreadable(path: "legacy", reason: "a failure injected by the test"))) {
            try makeStack().migrateLegacyToken(from: legacy, key: "accessToken", to: sessions) { .ada }
        }
        #expect(try sessions.load() == nil, "nothing saved")
        #expect(legacy.contents["accessToken"] == Data("legacy-secret".utf8))
    }

    @Test func aLegacyTokenThatCantBeDeletedIsDeletedByTheNextRun() throws {
        let legacy = UndeletableStore(InMemoryStore(["accessToken": Data("legacy-secret".utf8)]))
        let sessions = sessions
        #expect(throws: SnapshotError.store(.unwritable(path: "legacy", reason: "a failure injected by the test"))) {
            try makeStack().migrateLegacyToken(from: legacy, key: "accessToken", to: sessions) { .ada }
        }
        #expect(try sessions.load()?.session?.token.secret == "legacy-secret", "copied and verified before the deletion failed")
        #expect(try legacy.data(forKey: "accessToken") != nil, "the token is in both places, never in none")
        legacy.refusing.value = false
        #expect(try makeStack().migrateLegacyToken(from: legacy, key: "accessToken", to: sessions) { .grace } == .migrated)
        #expect(try legacy.data(forKey: "accessToken") == nil)
        #expect(try sessions.load()?.session?.user == .ada, "the saved session is the migrated one")
    }

    /// The migration is killed just before each of its writes (the token, the snapshot, the
    /// legacy deletion): the token is always in one place or the other, and the next launch
    /// finishes the job.
    @Test(.enabled(if: canRunFixtures), arguments: 1...3)
    func aKillAtAnyStepLosesNothing(step: Int) async throws {
        try await offThePool {
            let directory = try TemporaryDirectory()
            let legacyFile = directory.file("legacy.json")
            try JSONFileStore(url: legacyFile).setData(Data("legacy-secret".utf8), forKey: "accessToken")
            let process = sessionWorker("migrate", directory.path, legacyFile.path, "\(step)")
            process.standardOutput = FileHandle.nullDevice
            try process.run()
            process.waitUntilExit()
            #expect(process.terminationReason == .uncaughtSignal, "killed before write \(step)")

            let legacy = try JSONFileStore(url: legacyFile)
            let sessions = try sharedSessions(in: directory.url)
            let inLegacy = try legacy.data(forKey: "accessToken") != nil
            let inSessions = try sessions.load()?.session?.token.secret == "legacy-secret"
            #expect(inLegacy || inSessions, "the token is somewhere")

            let result = try makeStack().migrateLegacyToken(from: legacy, key: "accessToken", to: sessions) { .ada }
            #expect(result == (inLegacy ? .migrated : .nothingToMigrate))
            #expect(try legacy.data(forKey: "accessToken") == nil)
            #expect(try sessions.load()?.session?.token.secret == "legacy-secret")
            #expect(try sessions.load()?.session?.user == .ada)
        }
    }
}

/// A secret store whose writes fail while `failing` is set.
struct WriteFailingSecretStore: SecretStore {
    let base = InMemorySecretStore()
    let failing = Locked(false)
    func secret(forKey key: String) throws(StoreError) -> Data? { try base.secret(forKey: key) }
    func setSecret(_ secret: Data?, forKey key: String) throws(StoreError) {
        if failing.value { throw .unwritable(path: "keychain", reason: "full") }
        try base.setSecret(secret, forKey: key)
    }
}

/// A value behind a lock, for results a concurrent closure hands back.
final class Locked<Value: Sendable>: Sendable {
    private let stored: LockedBox<Value>
    init(_ value: Value) { stored = LockedBox(value) }
    var value: Value {
        get { stored.withLock { $0 } }
        set { stored.withLock { $0 = newValue } }
    }
}

/// This process's entries in /proc/locks on any of `paths` (by device and inode).
func heldFileLocks(on paths: [String]) throws -> [String] {
    let inodes = paths.compactMap { path -> String? in
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        return ":\(status.st_ino) "
    }
    let pid = " \(getpid()) "
    return try String(contentsOfFile: "/proc/locks", encoding: .utf8)
        .split(separator: "\n").map(String.init)
        .filter { line in line.contains(pid) && inodes.contains { line.contains($0) } }
}

/// A store whose writes fail while `refusing` is on: a legacy store that won't let go of its token.
struct UndeletableStore: KeyValueStore {
    let base: InMemoryStore
    let refusing = Locked(true)
    init(_ base: InMemoryStore) { self.base = base }
    func data(forKey key: String) throws(StoreError) -> Data? { try base.data(forKey: key) }
    func keys() throws(StoreError) -> [String] { try base.keys() }
    func write(_ changes: [String: Data?]) throws(StoreError) {
        if refusing.value { throw .unwritable(path: "legacy", reason: "a failure injected by the test") }
        try base.write(changes)
    }
}
