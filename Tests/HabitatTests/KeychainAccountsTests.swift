import Foundation
import Habitat
import HabitatPersistence
import HabitatPersistenceTesting
import HabitatKeychain
import HabitatTesting
import Testing

/// A user told apart by `id`, so several can be signed in.
struct Handle: Codable, Sendable, Equatable, Identifiable {
    var id: String
}

enum KeychainAccountsApp: EnvironmentSchema {
    typealias Services = NoServices
    typealias User = Handle
}

/// Several accounts whose tokens are in the (simulated) Keychain: an item each.
@Suite struct KeychainAccountsTests {
    let keychain = SimulatedKeychain()
    let snapshots = InMemoryStore()

    var sessions: SessionStore<KeychainAccountsApp> {
        SessionStore(
            store: snapshots,
            secrets: KeychainSecretStore(service: "com.example.app", accessibility: .whenUnlockedThisDeviceOnly, reportsMissingReliably: false, calls: keychain.calls)
        )
    }

    func stack() -> EnvironmentStack<KeychainAccountsApp> {
        EnvironmentStack(HabitatEnvironment(services: NoServices()))
    }

    func item(_ account: String) -> String? {
        keychain.storedData(service: "com.example.app", account: account).map { String(decoding: $0, as: UTF8.self) }
    }

    @Test func eachAccountHasItsOwnItemAndALockedDeviceKeepsEveryAccountWaiting() throws {
        let app = stack()
        app.login(user: Handle(id: "ada"), token: AuthToken("ada-token"))
        app.addAccount(user: Handle(id: "grace"), token: AuthToken("grace-token"))
        try app.save(to: sessions)
        #expect(item("habitat.session.token.grace")?.contains("grace-token") == true)
        #expect(item("habitat.session.token")?.contains("-token") == false, "the index holds no token")
        #expect(item("habitat.session.token.ada")?.contains("ada-token") == true)

        keychain.device = .locked
        let relaunched = stack()
        guard case .awaitingToken = relaunched.restoreAtLaunch(from: sessions) else {
            Issue.record("a locked Keychain is not a logout")
            return
        }
        #expect(relaunched.current.accounts.map(\.state) == [.awaitingToken, .awaitingToken])
        #expect(item("habitat.session.token.ada") != nil, "nothing deleted")

        keychain.device = .unlocked
        #expect(relaunched.protectedDataDidBecomeAvailable(for: sessions) == .restored)
        #expect(relaunched.current.session?.token == AuthToken("grace-token"))
        #expect(relaunched.current.otherAccounts.map(\.token) == [AuthToken("ada-token")])
    }

    @Test func anItemTheKeychainRefusesFailsTheSaveAndLosesNothing() throws {
        let app = stack()
        app.login(user: Handle(id: "ada"), token: AuthToken("ada-token"))
        try app.save(to: sessions)
        app.addAccount(user: Handle(id: "grace"), token: AuthToken("grace-token"))
        // The Keychain refuses the save's first write (a locked device).
        keychain.failNextWrites(with: KeychainStatus.interactionNotAllowed)
        #expect(throws: SnapshotError.self) { try app.save(to: sessions) }
        let snapshot = try #require(try sessions.load())
        #expect(snapshot.session?.user == Handle(id: "ada") && snapshot.session?.token == AuthToken("ada-token"))
        #expect(snapshot.otherAccounts.isEmpty)
        try app.save(to: sessions)
        #expect(try sessions.load()?.otherAccounts.map(\.user) == [Handle(id: "ada")], "the next save makes it")
    }

    // The one rule for an awaited token (`SessionMachine.tokenSettled`): a refresh of an account
    // that waits takes the store's accounts once the store settles it, as the unlock does.

    @Test func aRefreshOfAWaitingAccountGoesOnOnceItsTokenCanBeReadThoughNoneIsActive() async throws {
        let app = stack()
        app.login(user: Handle(id: "grace"), token: AuthToken("grace-token"))
        app.addAccount(user: Handle(id: "ada"), token: AuthToken("ada-token"))
        app.logout()   // ada, the active one: grace stays signed in, and none is active
        try app.save(to: sessions)

        keychain.device = .locked
        let relaunched = stack()
        relaunched.restoreAtLaunch(from: sessions)
        relaunched.enableAutosave(to: sessions)
        #expect(relaunched.current.session == nil)
        #expect(relaunched.current.otherAccounts.map(\.state) == [.awaitingToken])
        #expect(await relaunched.refreshSession(account: "grace") { _ in .refreshed(token: AuthToken("grace-2")) } == .awaitingToken)

        keychain.device = .unlocked
        let sent = LockedBox<[String]>([])
        let outcome = await relaunched.refreshSession(account: "grace") { session in
            sent.withLock { $0.append(session.token.secret) }
            return .refreshed(token: AuthToken("grace-2"))
        }
        #expect(outcome == .refreshed, "the token is read: the refresh goes on (it answered awaitingToken before)")
        #expect(sent.withLock { $0 } == ["grace-token"])
        #expect(relaunched.current.otherAccounts.map(\.token) == [AuthToken("grace-2")])
    }

    @Test func aRefreshOfAWaitingAccountThatWasSignedOutElsewhereSignsItOut() async throws {
        let app = stack()
        app.login(user: Handle(id: "ada"), token: AuthToken("ada-token"))
        try app.save(to: sessions)

        keychain.device = .locked
        let relaunched = stack()
        relaunched.restoreAtLaunch(from: sessions)
        relaunched.enableAutosave(to: sessions)
        #expect(relaunched.current.session?.state == .awaitingToken)

        // Another process, once the device is unlocked, signs ada out.
        keychain.device = .unlocked
        let other = stack()
        try other.restore(from: sessions)
        other.logout()
        try other.save(to: sessions)

        let calls = LockedBox(0)
        let outcome = await relaunched.refreshSession { _ in
            calls.withLock { $0 += 1 }
            return .refreshed(token: AuthToken("ada-2"))
        }
        #expect(outcome == .notLoggedIn, "the store settled the wait: ada is gone (it stayed waiting before)")
        #expect(calls.withLock { $0 } == 0)
        #expect(relaunched.current.session == nil)
    }
}
