import Foundation
import Habitat
import HabitatPersistence
import HabitatPersistenceTesting
import HabitatKeychain
import HabitatTesting
import Testing

struct KeychainMember: Codable, Sendable, Equatable {
    var name: String
}

struct Settings: Codable, Sendable, Equatable {
    var theme = "light"
}

struct NoServices: Sendable {}

enum KeychainApp: EnvironmentSchema {
    typealias Services = NoServices
    typealias User = KeychainMember
    typealias Config = Settings
}

/// Launches and refreshes of a session whose token is in the (simulated) Keychain, as on iOS:
/// "not found" is not final until the app says protected data is available.
@Suite struct KeychainSessionTests {
    let keychain = SimulatedKeychain()
    let snapshots = InMemoryStore()

    func sessions(
        accessibility: KeychainAccessibility = .afterFirstUnlockThisDeviceOnly,
        snapshots: InMemoryStore? = nil
    ) -> SessionStore<KeychainApp> {
        let secrets = KeychainSecretStore(
            service: "com.example.app",
            accessibility: accessibility,
            reportsMissingReliably: false,
            calls: keychain.calls
        )
        return SessionStore(store: snapshots ?? self.snapshots, secrets: secrets)
    }

    func stack() -> EnvironmentStack<KeychainApp> {
        EnvironmentStack(HabitatEnvironment(services: NoServices(), config: Settings()))
    }

    /// Ada signed in with token "t1", saved, and the app quit.
    func savedSession(accessibility: KeychainAccessibility = .afterFirstUnlockThisDeviceOnly) throws -> SessionStore<KeychainApp> {
        let sessions = sessions(accessibility: accessibility)
        let app = stack()
        app.login(user: KeychainMember(name: "Ada"), token: AuthToken("t1"))
        try app.save(to: sessions)
        return sessions
    }

    /// The one account's token item (the app names no accounts: its name is empty).
    var tokenItem: Data? { keychain.storedData(service: "com.example.app", account: "habitat.session.token.") }

    @Test(arguments: [false, true])
    func aLaunchBeforeFirstUnlockWaitsAndNeverLogsOutOrDeletes(prewarmedNotFound: Bool) async throws {
        let sessions = try savedSession()
        let item = tokenItem
        let snapshot = try snapshots.data(forKey: "habitat.session")
        keychain.device = .beforeFirstUnlock
        keychain.answersNotFoundBeforeFirstUnlock = prewarmedNotFound

        let app = stack()
        let launch = app.restoreAtLaunch(from: sessions)
        guard case .awaitingToken = launch else {
            Issue.record("expected awaitingToken, got \(launch)")
            return
        }
        #expect(app.current.currentUser == KeychainMember(name: "Ada"))
        #expect(app.current.session?.state == .awaitingToken)

        // An ordinary change with autosave on, and a refresh: nothing is asked, written or deleted.
        app.enableAutosave(to: sessions)
        app.updateConfig { $0.theme = "dark" }
        await app.flushAutosave()
        #expect(await app.refreshSession { _ in .ended } == .awaitingToken)
        #expect(tokenItem == item)
        #expect(try snapshots.data(forKey: "habitat.session") == snapshot)
        #expect(!keychain.receivedCalls.contains { if case .delete = $0 { true } else { false } })

        // Called too early while the Keychain still says "locked", the app's signal changes
        // nothing. (A prewarmed launch's "not found" can't be told from absence: the app calls
        // this only once protected data is available, as iOS tells it.)
        if !prewarmedNotFound {
            guard case .stillAwaiting = app.protectedDataDidBecomeAvailable(for: sessions) else {
                Issue.record("expected stillAwaiting")
                return
            }
            #expect(tokenItem == item)
        }

        // Unlocked: the session completes with its token, and the change made meanwhile is saved.
        keychain.device = .unlocked
        #expect(app.protectedDataDidBecomeAvailable(for: sessions) == .restored)
        #expect(app.current.session?.token.secret == "t1")
        #expect(app.current.session?.state == .restored)
        #expect(app.current.config.theme == "dark")
        await app.flushAutosave()
        let saved = try #require(try sessions.load())
        #expect(saved.config.theme == "dark")
        #expect(saved.session?.token.secret == "t1")
    }

    /// Unlocked, but the snapshot can't be read at that moment: the session keeps waiting, is
    /// neither restored nor logged out, nothing is written or deleted, and the next call completes it.
    @Test func anUnlockWhoseSnapshotCantBeReadKeepsTheSessionWaiting() throws {
        let store = MockKeyValueStore()
        let secrets = KeychainSecretStore(service: "com.example.app", reportsMissingReliably: false, calls: keychain.calls)
        let sessions = SessionStore<KeychainApp>(store: store, secrets: secrets)
        let saving = stack()
        saving.login(user: KeychainMember(name: "Ada"), token: AuthToken("t1"))
        try saving.save(to: sessions)
        let item = tokenItem
        keychain.device = .beforeFirstUnlock
        let app = stack()
        guard case .awaitingToken = app.restoreAtLaunch(from: sessions) else {
            Issue.record("expected awaitingToken")
            return
        }

        keychain.device = .unlocked
        store.failNext(1)
        store.clearOperations()
        let resolution = app.protectedDataDidBecomeAvailable(for: sessions)
        guard case .stillAwaiting(.store(.unavailable)) = resolution else {
            Issue.record("expected stillAwaiting with the store's error, got \(resolution)")
            return
        }
        #expect(app.current.session?.state == .awaitingToken, "still waiting")
        #expect(app.current.currentUser == KeychainMember(name: "Ada"))
        #expect(!store.operations.contains { if case .write = $0 { true } else { false } }, "nothing written")
        #expect(tokenItem == item, "nothing deleted")

        #expect(app.protectedDataDidBecomeAvailable(for: sessions) == .restored, "once it can read, the next call completes it")
        #expect(app.current.session?.token.secret == "t1")
    }

    @Test func aTokenThatIsReallyGoneLogsOutOnlyOnceTheStoreIsReadable() async throws {
        let sessions = try savedSession()
        try KeychainSecretStore(service: "com.example.app", calls: keychain.calls).setSecret(nil, forKey: "habitat.session.token.")
        let app = stack()
        guard case .awaitingToken = app.restoreAtLaunch(from: sessions) else {
            Issue.record("a missing token is not final before the app says the store is readable")
            return
        }
        app.enableAutosave(to: sessions)
        #expect(app.protectedDataDidBecomeAvailable(for: sessions) == .loggedOut(problem: nil))
        #expect(app.current.session == nil)
        await app.flushAutosave()
        #expect(try sessions.load()?.session == nil, "the logout is saved")
    }

    @Test func aTokenRotatedWhileLockedEndsTheSessionRatherThanKeepTheSpentOne() async throws {
        // The field's case: items readable only while unlocked, a background refresh while
        // locked. The new token can't be saved, and a relaunch with the old one would send a
        // spent refresh token (the server then revokes every session of the user): the session
        // ends, and no launch restores the old token.
        let sessions = try savedSession(accessibility: .whenUnlockedThisDeviceOnly)
        let app = stack()
        #expect(app.restoreAtLaunch(from: sessions).problem == nil)
        app.enableAutosave(to: sessions)
        keychain.device = .locked

        let outcome = await app.refreshSession { _ in .refreshed(token: AuthToken("t2")) }
        guard case .endedUnconfirmed(.notSaved(let problem)) = outcome else {
            Issue.record("expected endedUnconfirmed(.notSaved), got \(outcome)")
            return
        }
        guard case .store(.unavailable) = problem else {
            Issue.record("expected the locked keychain as the reason, got \(problem)")
            return
        }
        #expect(app.current.session == nil, "signed out here")
        keychain.device = .unlocked
        let relaunched = stack()
        relaunched.restoreAtLaunch(from: sessions)
        #expect(relaunched.current.session == nil, "and no launch sends the spent t1")
    }

    @Test func theDefaultClassSavesARotatedTokenWhileLocked() async throws {
        let sessions = try savedSession()
        let app = stack()
        app.restoreAtLaunch(from: sessions)
        app.enableAutosave(to: sessions)
        keychain.device = .locked
        #expect(await app.refreshSession { _ in .refreshed(token: AuthToken("t2")) } == .refreshed)
        #expect(try sessions.load()?.session?.token.secret == "t2")
    }

    @Test func aReinstallNeverRestoresTheOldTokenAndDiscardsItOnceReadable() throws {
        _ = try savedSession()
        #expect(tokenItem != nil)
        // Reinstalled: the app's files are gone, the Keychain item is not.
        let fresh = InMemoryStore()
        let sessions = sessions(snapshots: fresh)
        keychain.device = .beforeFirstUnlock
        keychain.answersNotFoundBeforeFirstUnlock = true
        let app = stack()
        guard case .nothingSaved = app.restoreAtLaunch(from: sessions) else {
            Issue.record("a reinstall restores nothing")
            return
        }
        #expect(tokenItem != nil, "not judged while the store may not be readable")
        keychain.device = .unlocked
        _ = app.restoreAtLaunch(from: sessions)
        #expect(tokenItem != nil, "a store whose not-found isn't final judges nothing on its own")
        #expect(app.protectedDataDidBecomeAvailable(for: sessions) == .notAwaiting)
        #expect(tokenItem == nil, "the old install's token is gone once the store is readable")
        #expect(app.current.session == nil)
    }

    @Test func aDamagedTokenIsReportedAndLeftInPlace() throws {
        let sessions = try savedSession()
        let secrets = KeychainSecretStore(service: "com.example.app", calls: keychain.calls)
        try secrets.setSecret(Data("garbage".utf8), forKey: "habitat.session.token.")
        let app = stack()
        let launch = app.restoreAtLaunch(from: sessions)
        guard case .restoredLoggedOut = launch, case .store(.decodingFailed(let key, _)) = launch.problem else {
            Issue.record("expected a restore with a reported problem, got \(launch)")
            return
        }
        #expect(key == "habitat.session.token.")
        #expect(app.current.session == nil)
        #expect(tokenItem == Data("garbage".utf8), "nothing deleted without saying so")
    }
}

/// An app update that starts sharing the session with an extension moves the token into the
/// shared access group; existing users stay signed in.
@Suite struct KeychainAccessGroupMoveTests {
    @Test func anUpdateMovesTheTokenIntoTheSharedGroupAndKeepsTheUserSignedIn() throws {
        let keychain = SimulatedKeychain(accessGroups: ["TEAMID.com.example.app", "TEAMID.com.example.shared"])
        let snapshots = InMemoryStore()
        // Version 1: the token in the app's default group (the first one).
        let version1 = SessionStore<KeychainApp>(store: snapshots, secrets: KeychainSecretStore(service: "com.example.app", calls: keychain.calls))
        let app = EnvironmentStack<KeychainApp>(HabitatEnvironment(services: NoServices(), config: Settings()))
        app.login(user: KeychainMember(name: "Ada"), token: AuthToken("t1"))
        try app.save(to: version1)

        // Version 2: the token in the shared group, where the extension reads it too.
        let old = KeychainSecretStore(service: "com.example.app", accessGroup: "TEAMID.com.example.app", calls: keychain.calls)
        let shared = KeychainSecretStore(service: "com.example.app", accessGroup: "TEAMID.com.example.shared", calls: keychain.calls)
        let version2 = SessionStore<KeychainApp>(store: snapshots, secrets: shared)
        #expect(try version2.moveToken(from: old))
        #expect(keychain.storedData(service: "com.example.app", account: "habitat.session.token", group: "TEAMID.com.example.app") == nil)
        #expect(keychain.storedData(service: "com.example.app", account: "habitat.session.token", group: "TEAMID.com.example.shared") != nil)

        let relaunched = EnvironmentStack<KeychainApp>(HabitatEnvironment(services: NoServices(), config: Settings()))
        guard case .restored = relaunched.restoreAtLaunch(from: version2) else {
            Issue.record("the user should still be signed in")
            return
        }
        #expect(relaunched.current.session?.token.secret == "t1")
        #expect(try version2.moveToken(from: old) == false, "run again, nothing to move")
    }
}
