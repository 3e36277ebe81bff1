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
}
