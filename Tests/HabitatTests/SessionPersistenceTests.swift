import Foundation
import Habitat
import HabitatPersistence
import HabitatPersistenceTesting
import HabitatTesting
import Testing

/// A session store over a JSON file and a secret directory, in the test's own directory.
struct FileSessions {
    let directory: TemporaryDirectory
    let sessions: SessionStore<TestApp>
    var storeDirectory: URL { directory.url.appendingPathComponent("store") }
    var secretDirectory: URL { directory.url.appendingPathComponent("secrets") }

    init(version: Int = 1, migrations: [SnapshotMigration] = []) throws {
        directory = try TemporaryDirectory()
        sessions = SessionStore(
            store: try JSONFileStore(url: directory.url.appendingPathComponent("store/session.json")),
            secrets: try FileSecretStore(directory: directory.url.appendingPathComponent("secrets")),
            version: version,
            migrations: migrations
        )
    }

    func filesContain(_ needle: String, under folder: URL) throws -> Bool {
        guard let enumerator = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil) else { return false }
        for case let file as URL in enumerator where !file.hasDirectoryPath {
            if let data = try? Data(contentsOf: file), data.range(of: Data(needle.utf8)) != nil { return true }
        }
        return false
    }
}

@Suite struct SessionStoreTests {
    let token = AuthToken("tok-9d2f-SECRET", expiresAt: fixedDate.addingTimeInterval(3600))

    @Test func aSavedSessionComesBackRestored() throws {
        let files = try FileSessions()
        let env = makeEnvironment().with(\.session, UserSession(user: .ada, token: token)).with(\.config.timeout, 5)
        try files.sessions.save(env)
        let snapshot = try #require(try files.sessions.load())
        #expect(snapshot.session?.user == .ada)
        #expect(snapshot.session?.token == token)
        #expect(snapshot.session?.token.expiresAt == token.expiresAt)
        #expect(snapshot.session?.state == .restored)
        #expect(snapshot.config.timeout == 5)
        #expect(snapshot.savedAt == fixedDate)
    }

    @Test func theTokenLivesOnlyInTheSecretStoreAndLogoutDeletesIt() throws {
        let files = try FileSessions()
        let env = makeEnvironment().with(\.session, UserSession(user: .ada, token: token))
        try files.sessions.save(env)
        #expect(try !files.filesContain(token.secret, under: files.storeDirectory), "never in the plain store")
        #expect(try files.filesContain(token.secret, under: files.secretDirectory))
        #expect(try permissions(files.secretDirectory.path) == 0o700)
        #expect(try permissions(files.secretDirectory.appendingPathComponent("habitat.session.token").path) == 0o600)
        #expect(try permissions(files.storeDirectory.appendingPathComponent("session.json").path) == 0o600)

        try files.sessions.save(env.with(\.session, nil))
        #expect(try !files.directory.anyFileContains(token.secret), "nothing of the token remains after logout")
        #expect(try files.sessions.load()?.session == nil)
    }

    @Test func aSnapshotWhoseTokenIsGoneLoadsLoggedOut() throws {
        let secrets = InMemorySecretStore()
        let sessions = SessionStore<TestApp>(store: InMemoryStore(), secrets: secrets)
        try sessions.save(makeEnvironment().with(\.session, UserSession(user: .ada, token: token)).with(\.config.timeout, 9))
        try secrets.setSecret(nil, forKey: sessions.tokenKey(forAccount: ""))
        let snapshot = try #require(try sessions.load())
        #expect(snapshot.session == nil)
        #expect(snapshot.config.timeout == 9)
    }

    @Test func nothingSavedLoadsNil() throws {
        let sessions = SessionStore<TestApp>(store: InMemoryStore(), secrets: InMemorySecretStore())
        #expect(try sessions.load() == nil)
    }

    @Test func clearRemovesSnapshotAndToken() throws {
        let store = InMemoryStore()
        let secrets = InMemorySecretStore()
        let sessions = SessionStore<TestApp>(store: store, secrets: secrets, key: "app.session")
        try sessions.save(makeEnvironment().with(\.session, UserSession(user: .ada, token: token)))
        #expect(secrets.keys.sorted() == ["app.session.token", "app.session.token."], "the index and the account's item")
        try sessions.clear()
        #expect(store.contents.isEmpty)
        #expect(secrets.keys.isEmpty)
    }

    @Test func aNewerVersionIsRefusedAndLeftUntouched() throws {
        let store = InMemoryStore()
        let newer = SessionStore<TestApp>(store: store, secrets: InMemorySecretStore(), version: 3)
        try newer.save(makeEnvironment())
        let before = store.contents
        let older = SessionStore<TestApp>(store: store, secrets: InMemorySecretStore(), version: 2)
        #expect(throws: SnapshotError.unsupportedVersion(key: "habitat.session", found: 3, newest: 2)) {
            try older.load()
        }
        #expect(store.contents == before)
    }

    @Test func migrationsMoveOldSnapshotsForwardInOrder() throws {
        let store = InMemoryStore()
        // Version 1 stored the timeout in minutes under another name.
        let v1 = #"{"version":1,"payload":{"config":{"minutes":2,"features":[]},"session":null}}"#
        try store.setData(Data(v1.utf8), forKey: "habitat.session")
        let log = MigrationLog()
        let sessions = SessionStore<TestApp>(
            store: store,
            secrets: InMemorySecretStore(),
            version: 3,
            migrations: [
                SnapshotMigration(from: 2) { data in
                    log.append(2)
                    return try rewriteConfig(data) { config in config["timeout"] = (config["timeout"] as? Int ?? 0) + 1 }
                },
                SnapshotMigration(from: 1) { data in
                    log.append(1)
                    return try rewriteConfig(data) { config in
                        config["timeout"] = (config.removeValue(forKey: "minutes") as? Int ?? 0) * 60
                    }
                },
            ]
        )
        let snapshot = try #require(try sessions.load())
        #expect(snapshot.config.timeout == 121)
        #expect(log.entries == [1, 2])
        #expect(store.contents["habitat.session"] == Data(v1.utf8), "loading never rewrites the stored data")
    }

    @Test func aMissingMigrationIsATypedError() throws {
        let store = InMemoryStore()
        try SessionStore<TestApp>(store: store, secrets: InMemorySecretStore(), version: 1).save(makeEnvironment())
        let sessions = SessionStore<TestApp>(store: store, secrets: InMemorySecretStore(), version: 2)
        #expect(throws: SnapshotError.missingMigration(key: "habitat.session", from: 1)) { try sessions.load() }
    }

    @Test func aFailingMigrationIsATypedError() throws {
        struct Nope: Error {}
        let store = InMemoryStore()
        try SessionStore<TestApp>(store: store, secrets: InMemorySecretStore()).save(makeEnvironment())
        let sessions = SessionStore<TestApp>(
            store: store, secrets: InMemorySecretStore(), version: 2,
            migrations: [SnapshotMigration(from: 1) { _ in throw Nope() }]
        )
        #expect {
            try sessions.load()
        } throws: { error in
            guard case .migrationFailed(_, let from, _) = error as? SnapshotError else { return false }
            return from == 1
        }
    }

    @Test(arguments: [
        "not json", "[]", #"{"version":"1"}"#, #"{"version":1}"#, #"{"version":1,"payload":{"config":7}}"#,
        #"{"version":0,"payload":{}}"#, #"{"version":-4,"payload":{}}"#,
    ])
    func anInvalidSnapshotIsATypedErrorAndLeftUntouched(_ stored: String) throws {
        let store = InMemoryStore(["habitat.session": Data(stored.utf8)])
        let sessions = SessionStore<TestApp>(store: store, secrets: InMemorySecretStore())
        #expect {
            try sessions.load()
        } throws: { error in
            guard case .invalidSnapshot(let key, _) = error as? SnapshotError else { return false }
            return key == "habitat.session"
        }
        #expect(store.contents["habitat.session"] == Data(stored.utf8))
        #expect(store.contents["habitat.session.invalid"] == Data(stored.utf8), "and a copy kept aside")
    }

    /// A snapshot of the wrong shape (the app's user type changed) is kept aside before the next
    /// save replaces it, as a damaged file is; a later bad snapshot doesn't replace that copy.
    @Test func aSnapshotOfTheWrongShapeIsKeptAsideBeforeTheNextSaveReplacesIt() throws {
        let wrongShape = Data(#"{"version":1,"payload":{"session":{"user":{"login":"ada"},"state":"authenticated"}}}"#.utf8)
        let store = InMemoryStore(["habitat.session": wrongShape])
        let sessions = SessionStore<TestApp>(store: store, secrets: InMemorySecretStore())
        let stack = makeStack()
        #expect(stack.restoreAtLaunch(from: sessions).problem != nil)
        stack.login(user: .grace, token: AuthToken("g"))
        try stack.save(to: sessions)
        #expect(try sessions.load()?.session?.user == .grace, "the next save replaced the snapshot")
        #expect(store.contents["habitat.session.invalid"] == wrongShape, "the old one is kept aside")

        try store.write(["habitat.session": Data(#"{"version":1,"payload":7}"#.utf8)])
        #expect(throws: SnapshotError.self) { try sessions.load() }
        #expect(store.contents["habitat.session.invalid"] == wrongShape, "the first copy stays")
    }

    /// A logout whose token can't be deleted (a secrets directory made immutable) still ends
    /// the session on disk: the signed-out snapshot is written, the caller is told, the next
    /// launch is logged out, and the token no snapshot names is discarded once it can be.
    @Test func aLogoutWhoseTokenCantBeDeletedStillEndsTheSessionOnDisk() throws {
        let secrets = WriteRefusingSecretStore()
        let store = InMemoryStore()
        let sessions = SessionStore<TestApp>(store: store, secrets: secrets)
        try sessions.save(makeEnvironment().with(\.session, UserSession(user: .ada, token: AuthToken("ada-token"))))

        secrets.refusesWrites = true
        #expect(throws: SnapshotError.store(.unwritable(path: "habitat.session.token.", reason: "immutable"))) {
            try sessions.save(makeEnvironment())
        }
        let relaunched = makeStack()
        #expect(relaunched.restoreAtLaunch(from: sessions).snapshot?.session == nil, "the next launch is logged out")
        #expect(relaunched.current.session == nil)

        secrets.refusesWrites = false
        _ = try sessions.load()
        #expect(try secrets.secret(forKey: "habitat.session.token.") == nil, "the orphan token is discarded once it can be")
        #expect(try secrets.secret(forKey: "habitat.session.token") == nil, "and the index that listed it")
    }

    /// A login whose snapshot can't be written leaves what was saved before: the previous
    /// session with its own token, nothing half-done. A logout whose snapshot can't be written
    /// still ends the session: its token went first.
    @Test func aFailedLoginSaveLeavesThePreviousSessionAndAFailedLogoutSaveStillEndsIt() throws {
        let store = MockKeyValueStore()
        let secrets = InMemorySecretStore()
        let sessions = SessionStore<TestApp>(store: store, secrets: secrets)
        let signedIn = makeEnvironment().with(\.session, UserSession(user: .ada, token: AuthToken("ada-token")))
        try sessions.save(signedIn)

        store.failNext()
        #expect(throws: SnapshotError.self) { try sessions.save(signedIn.with(\.session, UserSession(user: .grace, token: AuthToken("grace-token")))) }
        let after = try #require(try sessions.load())
        #expect(after.session?.user == .ada)
        #expect(after.session?.token.secret == "ada-token")
        let record = try #require(try secrets.secret(forKey: sessions.tokenKey(forAccount: "")))
        #expect(String(decoding: record, as: UTF8.self).contains("ada-token"))
        #expect(!String(decoding: record, as: UTF8.self).contains("grace-token"), "the failed login's token is gone")

        store.failNext()
        #expect(throws: SnapshotError.self) { try sessions.save(signedIn.with(\.session, nil)) }
        #expect(try secrets.secret(forKey: sessions.tokenKey(forAccount: "")) == nil, "the token went first")
        let relaunched = try #require(try sessions.load())
        #expect(relaunched.session == nil, "a relaunch is logged out")
    }

    @Test func storeFailuresAreWrapped() throws {
        let directory = try TemporaryDirectory()
        try Data("garbage".utf8).write(to: directory.file("session.json"))
        let sessions = SessionStore<TestApp>(
            store: try JSONFileStore(url: directory.file("session.json")),
            secrets: InMemorySecretStore()
        )
        #expect {
            try sessions.load()
        } throws: { error in
            guard case .store(.corrupted(let path, _, _)) = error as? SnapshotError else { return false }
            return path == directory.file("session.json").path
        }
    }
}

final class MigrationLog: Sendable {
    private let values = LockedBox<[Int]>([])
    func append(_ value: Int) { values.withLock { $0.append(value) } }
    var entries: [Int] { values.withLock { $0 } }
}

func rewriteConfig(_ data: Data, _ change: (inout [String: Any]) -> Void) throws -> Data {
    var document = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    var payload = try #require(document["payload"] as? [String: Any])
    var config = try #require(payload["config"] as? [String: Any])
    change(&config)
    payload["config"] = config
    document["payload"] = payload
    return try JSONSerialization.data(withJSONObject: document)
}

@Suite struct StackPersistenceTests {
    let token = AuthToken("tok-5a1b-SECRET", expiresAt: fixedDate.addingTimeInterval(60))

    @Test func restoreBringsBackTheSessionAsRestored() async throws {
        let files = try FileSessions()
        let before = makeStack()
        before.login(user: .ada, token: token)
        before.updateConfig { $0.timeout = 12 }
        try before.save(to: files.sessions)

        let after = makeStack()  // the next launch
        let changes = after.changes
        let snapshot = try after.restore(from: files.sessions)
        #expect(snapshot?.session?.user == .ada)
        #expect(after.current.currentUser == .ada)
        #expect(after.current.session?.state == .restored)
        #expect(after.current.session?.token == token)
        #expect(after.current.services.authorization == "Bearer \(token.secret)", "services got the token")
        #expect(after.current.config.timeout == 12)
        #expect(after.depth == 1)
        let observed = await collect(1, from: changes)
        #expect(observed.map(\.kind) == [.restore])
    }

    @Test func restoringNothingChangesNothing() throws {
        let stack = makeStack()
        let sessions = SessionStore<TestApp>(store: InMemoryStore(), secrets: InMemorySecretStore())
        #expect(try stack.restore(from: sessions) == nil)
        #expect(stack.current.session == nil)
    }

    @Test func aFailedRestoreLeavesTheStackAsItWas() throws {
        let store = InMemoryStore(["habitat.session": Data("{".utf8)])
        let stack = makeStack()
        stack.login(user: .grace, token: AuthToken("g"))
        #expect(throws: SnapshotError.self) {
            try stack.restore(from: SessionStore(store: store, secrets: InMemorySecretStore()))
        }
        #expect(stack.current.currentUser == .grace)
        #expect(stack.current.session?.state == .authenticated)
    }

    @Test func refreshMovesARestoredSessionToAuthenticated() async throws {
        let stack = try restoredStack()
        let fresh = AuthToken("fresh", expiresAt: fixedDate.addingTimeInterval(7200))
        let outcome = await stack.refreshSession { session in
            #expect(session.state == .restored)
            return .refreshed(token: fresh, user: TestUser(id: 1, name: "Ada L."))
        }
        #expect(outcome == .refreshed)
        #expect(stack.current.session?.state == .authenticated)
        #expect(stack.current.session?.token == fresh)
        #expect(stack.current.currentUser?.name == "Ada L.")
        #expect(stack.current.services.authorization == "Bearer fresh")
    }

    @Test func refreshThatEndsTheSessionLogsOutAndReportsExpiry() async throws {
        let expired = try restoredStack(expiresAt: fixedDate.addingTimeInterval(-1))
        #expect(expired.current.session?.isExpired(at: expired.current.now()) == true)
        #expect(await expired.refreshSession { _ in .ended } == .ended(expired: true))
        #expect(expired.current.session == nil)
        #expect(expired.current.services.authorization == nil)

        let valid = try restoredStack(expiresAt: fixedDate.addingTimeInterval(60))
        #expect(await valid.refreshSession { _ in .ended } == .ended(expired: false))
    }

    @Test func refreshWhileLoggedOutAsksNothing() async {
        let stack = makeStack()
        let outcome = await stack.refreshSession { _ in
            Issue.record("refresh must not be called")
            return .ended
        }
        #expect(outcome == .notLoggedIn)
    }

    @Test func aRefreshOvertakenByALogoutIsDropped() async throws {
        let stack = try restoredStack()
        let outcome = await stack.refreshSession { _ in
            stack.logout()
            return .refreshed(token: AuthToken("late"))
        }
        #expect(outcome == .superseded)
        #expect(stack.current.session == nil)
    }

    @Test func aRefreshThatNeverLeftChangesNothing() async throws {
        let stack = try restoredStack()
        await #expect(throws: URLError.self) {
            try await stack.refreshSession { _ in throw URLError(.notConnectedToInternet) }
        }
        #expect(stack.current.session?.state == .restored)
        #expect(await stack.refreshSession { _ in .notSent } == .notSent)
        #expect(stack.current.session?.state == .restored, "not confirmed, not ended")
    }

    @Test func aRefreshWhoseAnswerWasLostEndsTheSession() async throws {
        struct ConnectionDropped: Error {}
        let stack = try restoredStack()
        await #expect(throws: ConnectionDropped.self) {
            try await stack.refreshSession { _ in throw ConnectionDropped() }
        }
        #expect(stack.current.session == nil, "the token may be spent: never sent again")
    }

    @Test func autosaveSavesTransitionsButNeverPushesPopsOrScopes() async throws {
        let store = InMemoryStore()
        let secrets = InMemorySecretStore()
        let sessions = SessionStore<TestApp>(store: store, secrets: secrets)
        let stack = makeStack()
        stack.enableAutosave(to: sessions)

        stack.push { $0.config.timeout = 1 }
        stack.pop()
        stack.replaceCurrent { $0.config.timeout = 2 }
        #expect(store.contents.isEmpty, "push, pop and replace are never saved")

        stack.login(user: .ada, token: token)
        await stack.flushAutosave()
        #expect(try sessions.load()?.session?.user == .ada)
        #expect(try sessions.load()?.config.timeout == 2, "the save writes the current state")
        try stack.updateCurrentUser { $0.name = "Ada L." }
        await stack.flushAutosave()
        #expect(try sessions.load()?.session?.user.name == "Ada L.")
        stack.updateConfig { $0.timeout = 3 }
        await stack.flushAutosave()
        #expect(try sessions.load()?.config.timeout == 3)

        stack.withEnvironment({ _ in }) {
            stack.logout()
            stack.updateConfig { $0.timeout = 99 }
        }
        await stack.flushAutosave()
        #expect(try sessions.load()?.session?.user.name == "Ada L.", "scoped changes are never saved")
        #expect(try sessions.load()?.config.timeout == 3)

        stack.logout()
        stack.disableAutosave()
        await stack.flushAutosave()
        #expect(try sessions.load()?.session == nil, "a change before disableAutosave is still saved")
        #expect(secrets.keys.isEmpty, "logout deleted the token")

        stack.login(user: .grace, token: token)
        await stack.flushAutosave()
        #expect(try sessions.load()?.session == nil)
    }

    /// Saving happens off the caller's thread: a transition returns while the store is still
    /// blocked, a burst of changes is coalesced into a few saves, and the last state lands.
    @Test func autosaveRunsOffTheCallersThreadAndCoalesces() async throws {
        let store = BlockingStore()
        let sessions = SessionStore<TestApp>(store: store, secrets: InMemorySecretStore())
        let stack = makeStack()
        stack.enableAutosave(to: sessions)
        store.block()
        stack.login(user: .ada, token: token)
        #expect(store.waitForBlockedWrite(), "the first save started and is stuck in the store")
        for timeout in 1...100 {
            stack.updateConfig { $0.timeout = timeout }     // returns although the store is stuck
        }
        store.unblock()
        await stack.flushAutosave()
        #expect(store.writes <= 3, "101 changes, \(store.writes) saves")
        #expect(try sessions.load()?.config.timeout == 100, "the last state landed")
        #expect(try sessions.load()?.session?.user == .ada)
    }

    @Test func flushAutosaveReturnsAtOnceWhenNothingIsPending() async {
        let stack = makeStack()
        await stack.flushAutosave()
        stack.enableAutosave(to: .inMemory())
        await stack.flushAutosave()
    }

    @Test func autosaveFailuresGoToTheErrorHandler() async throws {
        let errors = ErrorLog()
        let sessions = SessionStore<TestApp>(
            store: InMemoryStore(["habitat.session": Data()]),
            secrets: FailingSecretStore()
        )
        let stack = makeStack()
        stack.enableAutosave(to: sessions) { errors.append($0) }
        stack.login(user: .ada, token: token)
        await stack.flushAutosave()
        #expect(errors.entries == [.store(.unavailable(key: "secrets", reason: "secret store offline"))])
        #expect(stack.current.currentUser == .ada, "the transition itself happened")
    }

    /// A stack restored from a saved session for Ada.
    func restoredStack(expiresAt: Date? = nil) throws -> EnvironmentStack<TestApp> {
        let sessions = SessionStore<TestApp>(store: InMemoryStore(), secrets: InMemorySecretStore())
        try sessions.save(makeEnvironment().with(\.session, UserSession(user: .ada, token: AuthToken("old", expiresAt: expiresAt))))
        let stack = makeStack()
        try stack.restore(from: sessions)
        return stack
    }
}

struct FailingSecretStore: SecretStore {
    func secret(forKey key: String) throws(StoreError) -> Data? { throw .unavailable(key: "secrets", reason: "secret store offline") }
    func setSecret(_ secret: Data?, forKey key: String) throws(StoreError) { throw .unavailable(key: "secrets", reason: "secret store offline") }
}

/// An in-memory store whose writes can be held up, to show who waits for them.
final class BlockingStore: KeyValueStore, @unchecked Sendable {
    // Safe: every property is only touched with `condition` locked.
    private let condition = NSCondition()
    private var values: [String: Data] = [:]
    private var blocked = false
    private var stuck = false
    private var writeCount = 0

    func block() { condition.withLock { blocked = true } }
    func unblock() {
        condition.withLock {
            blocked = false
            condition.broadcast()
        }
    }
    var writes: Int { condition.withLock { writeCount } }

    /// Waits (up to 10 s) until a write is held up by `block()`.
    func waitForBlockedWrite() -> Bool {
        condition.withLock {
            let deadline = Date().addingTimeInterval(10)
            while !stuck, condition.wait(until: deadline) {}
            return stuck
        }
    }

    func data(forKey key: String) throws(StoreError) -> Data? { condition.withLock { values[key] } }
    func keys() throws(StoreError) -> [String] { condition.withLock { Array(values.keys) } }
    func write(_ changes: [String: Data?]) throws(StoreError) {
        condition.withLock {
            while blocked {
                stuck = true
                condition.broadcast()
                condition.wait()
            }
            stuck = false
            writeCount += 1
            for (key, value) in changes { values[key] = value }
        }
    }
}

final class ErrorLog: Sendable {
    private let values = LockedBox<[SnapshotError]>([])
    func append(_ value: SnapshotError) { values.withLock { $0.append(value) } }
    var entries: [SnapshotError] { values.withLock { $0 } }
}

/// A secret store whose writes fail while `refusesWrites` is set, as a directory made immutable.
// Safe: `refusing` is read and written only with `lock` held; `base` is thread-safe.
final class WriteRefusingSecretStore: SecretStore, @unchecked Sendable {
    private let base = InMemorySecretStore()
    private let lock = NSLock()
    private var refusing = false
    var refusesWrites: Bool {
        get { lock.withLock { refusing } }
        set { lock.withLock { refusing = newValue } }
    }

    func secret(forKey key: String) throws(StoreError) -> Data? { try base.secret(forKey: key) }

    func setSecret(_ secret: Data?, forKey key: String) throws(StoreError) {
        if refusesWrites { throw .unwritable(path: key, reason: "immutable") }
        try base.setSecret(secret, forKey: key)
    }
}
