import Foundation
import Habitat
import HabitatPersistence
import HabitatPersistenceTesting
import HabitatTesting
import Testing

/// A session store for several accounts over a JSON file and a secret directory, in the test's
/// own directory.
struct AccountFiles {
    let directory: TemporaryDirectory
    let secrets: FileSecretStore
    let sessions: SessionStore<AccountsApp>

    init(directory: TemporaryDirectory? = nil) throws {
        let directory = try directory ?? TemporaryDirectory()
        self.directory = directory
        secrets = try FileSecretStore(directory: directory.file("secrets"))
        sessions = SessionStore(store: try JSONFileStore(url: directory.file("session.json")), secrets: secrets)
    }

    /// The names of the secret files, lock files left out.
    func secretFiles() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory.file("secrets").path).filter { !$0.hasPrefix(".") }.sorted()
    }
}

/// Three accounts signed in, grace active.
func threeAccounts() -> EnvironmentStack<AccountsApp> {
    let stack = makeAccountsStack()
    stack.login(user: .ada, token: memberToken(.ada, 1))
    stack.addAccount(user: .alan, token: memberToken(.alan, 2))
    stack.addAccount(user: .grace, token: memberToken(.grace, 3))
    return stack
}

@Suite struct AccountStoreTests {
    @Test func everyAccountComesBackWithItsOwnTokenAndTheActiveOneStaysActive() throws {
        let files = try AccountFiles()
        let stack = threeAccounts()
        try stack.save(to: files.sessions)
        #expect(try files.secretFiles() == ["habitat.session.token", "habitat.session.token.ada", "habitat.session.token.alan", "habitat.session.token.grace"])
        #expect(try !files.directory.file("session.json").contentsContain("#"), "no token in the plain store")

        let relaunched = makeAccountsStack()
        let snapshot = try #require(try relaunched.restore(from: files.sessions))
        #expect(snapshot.otherAccounts.map(\.user) == [.ada, .alan])
        #expect(relaunched.current.session?.user == .grace && relaunched.current.session?.token == memberToken(.grace, 3))
        #expect(relaunched.current.session?.state == .restored)
        #expect(relaunched.current.otherAccounts.map(\.token) == [memberToken(.ada, 1), memberToken(.alan, 2)])
        #expect(relaunched.current.services.member == .grace)
    }

    @Test func aSwitchIsSavedAndEachTokenMovesWithItsAccount() throws {
        let files = try AccountFiles()
        let stack = threeAccounts()
        try stack.save(to: files.sessions)
        try stack.switchAccount(to: "ada")
        try stack.save(to: files.sessions)
        #expect(try files.secretFiles() == ["habitat.session.token", "habitat.session.token.ada", "habitat.session.token.alan", "habitat.session.token.grace"], "every account's item stays: a switch moves no token")
        let snapshot = try #require(try files.sessions.load())
        #expect(snapshot.session?.user == .ada && snapshot.session?.token == memberToken(.ada, 1))
        #expect(snapshot.otherAccounts.map(\.token) == [memberToken(.grace, 3), memberToken(.alan, 2)], "grace takes ada's place")
    }

    @Test func signingOutOneAccountPurgesItsTokenAndItsDataAndNothingElse() throws {
        let files = try AccountFiles()
        let stack = threeAccounts()
        let adaDrafts = files.sessions.accountData(for: "ada")
        let graceDrafts = files.sessions.accountData(for: "grace")
        try adaDrafts.setData(Data("ada's draft".utf8), forKey: "draft")
        try graceDrafts.setData(Data("grace's draft".utf8), forKey: "draft")
        try stack.save(to: files.sessions)

        stack.logout(account: "ada")
        try stack.save(to: files.sessions)
        #expect(try files.secretFiles() == ["habitat.session.token", "habitat.session.token.alan", "habitat.session.token.grace"])
        #expect(try adaDrafts.keys().isEmpty, "ada's data is purged")
        #expect(try graceDrafts.data(forKey: "draft") == Data("grace's draft".utf8))
        #expect(try !files.directory.anyFileContains("ada#1"))

        stack.logout(account: "grace")
        try stack.save(to: files.sessions)
        #expect(try graceDrafts.keys().isEmpty, "the active account's data goes with it")
        let snapshot = try #require(try files.sessions.load())
        #expect(snapshot.session == nil && snapshot.otherAccounts.map(\.user) == [.alan])
        #expect(try !files.directory.anyFileContains("grace#3"))
    }

    /// Two stacks on one store: one switches accounts and saves; the other, which never saw the
    /// switch, signs an account out and saves. Its save keeps both changes: the switch is not
    /// undone, and the sign-out is not lost.
    @Test func aStaleSaveKeepsAnotherStacksSwitchBesideItsOwnSignOut() throws {
        let files = try AccountFiles()
        try threeAccounts().save(to: files.sessions)   // ada, alan; grace active
        let first = makeAccountsStack()
        try first.restore(from: files.sessions)
        let second = makeAccountsStack()
        try second.restore(from: files.sessions)

        try second.switchAccount(to: "ada")
        try second.save(to: files.sessions)
        first.logout(account: "alan")
        try first.save(to: files.sessions)

        #expect(first.current.session?.user == .ada, "the switch made elsewhere is taken, not undone")
        #expect(first.current.otherAccounts.map(\.user) == [.grace])
        let snapshot = try #require(try files.sessions.load())
        #expect(snapshot.session?.user == .ada && snapshot.session?.token == memberToken(.ada, 1))
        #expect(snapshot.otherAccounts.map(\.user) == [.grace] && snapshot.otherAccounts.first?.token == memberToken(.grace, 3))
        #expect(try files.secretFiles() == ["habitat.session.token", "habitat.session.token.ada", "habitat.session.token.grace"], "alan's token is gone")
    }

    @Test func logoutAllRemovesEveryTokenAndARelaunchIsSignedOut() throws {
        let files = try AccountFiles()
        let stack = threeAccounts()
        try stack.save(to: files.sessions)
        stack.logoutAll()
        try stack.save(to: files.sessions)
        #expect(try files.secretFiles().isEmpty)
        let relaunched = makeAccountsStack()
        try relaunched.restore(from: files.sessions)
        #expect(relaunched.current.accounts.isEmpty)
        #expect(try !files.directory.anyFileContains("#"))
    }

    @Test func aDamagedItemLosesOnlyItsAccount() throws {
        let files = try AccountFiles()
        try threeAccounts().save(to: files.sessions)
        try files.secrets.setSecret(Data("garbage".utf8), forKey: files.sessions.tokenKey(forAccount: "alan"))
        let snapshot = try #require(try files.sessions.load())
        #expect(snapshot.session?.user == .grace)
        #expect(snapshot.otherAccounts.map(\.user) == [.ada])
        guard case .decodingFailed(let key, _)? = snapshot.accountProblems["alan"] else {
            Issue.record("alan's problem is reported: \(snapshot.accountProblems)")
            return
        }
        #expect(key == "habitat.session.token.alan")
        #expect(try files.secrets.secret(forKey: key) == Data("garbage".utf8), "left in place")
    }

    @Test func aLockedStoreKeepsEveryAccountWaitingAndDeletesNothing() throws {
        let secrets = MockSecretStore()
        let sessions = SessionStore<AccountsApp>(store: InMemoryStore(), secrets: secrets)
        try threeAccounts().save(to: sessions)
        let before = secrets.keys
        secrets.failNext(10, with: .unavailable(key: "any", reason: "the device is locked"))
        let snapshot = try #require(try sessions.load())
        #expect(snapshot.session?.state == .awaitingToken)
        #expect(snapshot.otherAccounts.map(\.state) == [.awaitingToken, .awaitingToken])
        #expect(snapshot.otherAccounts.map(\.user) == [.ada, .alan], "the user data is there")
        #expect(secrets.keys == before, "nothing deleted")

        let stack = makeAccountsStack()
        try stack.restore(from: sessions)
        try stack.save(to: sessions)
        #expect(secrets.keys == before, "an awaiting state writes nothing")
    }

    @Test func aReinstallsLeftoverTokensAreDiscardedPerAccount() throws {
        let files = try AccountFiles()
        try threeAccounts().save(to: files.sessions)
        // A reinstall: the app's files are gone, the secret store (a Keychain) kept its items.
        try FileManager.default.removeItem(at: files.directory.file("session.json"))
        let reinstalled = try AccountFiles(directory: files.directory)
        #expect(try reinstalled.sessions.load() == nil)
        #expect(try reinstalled.secretFiles().isEmpty, "every account's leftover token is gone")
    }

    @Test func aPreviousTokenTheTidyingCouldntDropIsDroppedByTheNextSave() throws {
        // Ada's item is written twice by a save that rotates her token: her new token beside the
        // previous one, then (tidying, once the snapshot is written) the new one alone.
        let secrets = RefusingDeletes(refusing: "habitat.session.token.ada", writes: true, allowing: 2)
        let sessions = SessionStore<AccountsApp>(store: InMemoryStore(), secrets: secrets)
        var environment = threeAccounts().current
        try sessions.save(environment)
        environment.otherAccounts[0].token = memberToken(.ada, 4)
        try sessions.save(environment)
        #expect(secrets.base.contains("ada#1"), "the tidying failed: the previous token is still beside the new one")
        secrets.refusing = nil
        let snapshot = try #require(try sessions.load())
        #expect(snapshot.otherAccounts.first?.token == memberToken(.ada, 4), "the save was made")
        try sessions.save(environment)
        #expect(!secrets.base.contains("ada#1"))
        #expect(secrets.base.keys == ["habitat.session.token", "habitat.session.token.ada", "habitat.session.token.alan", "habitat.session.token.grace"])
    }

    @Test func aSaveThatCantWriteTheSnapshotLeavesTheStoreAsItWas() throws {
        let store = MockKeyValueStore()
        let secrets = MockSecretStore()
        let sessions = SessionStore<AccountsApp>(store: store, secrets: secrets)
        let stack = threeAccounts()
        try stack.save(to: sessions)
        stack.addAccount(user: Member(id: "edsger", name: "Edsger"), token: AuthToken("edsger#9"))
        // NB: the next write, not the next operation: the save reads the store first.
        store.failNextWrites(1)
        #expect(throws: SnapshotError.self) { try stack.save(to: sessions) }
        #expect(secrets.operations.contains(.write("habitat.session.token.edsger")), "the save got as far as the new token")
        let snapshot = try #require(try sessions.load())
        #expect(snapshot.session?.user == .grace)
        #expect(snapshot.otherAccounts.map(\.user) == [.ada, .alan])
        #expect(secrets.keys.contains("habitat.session.token.edsger") == false, "the new item was taken back")
    }

    /// A login that replaces the signed-in account signs that account out, and a sign-out stands
    /// whatever fails after it: the replaced account's token goes first, so a save whose snapshot
    /// can't be written leaves nobody signed in on disk, never the replaced account back (the
    /// person now at the device signed in as someone else), and nothing of the new account.
    @Test func aFailedLoginOverAnotherAccountLeavesNobodySignedInNeverTheAccountItReplaced() throws {
        let store = MockKeyValueStore()
        let secrets = MockSecretStore()
        let data = MockKeyValueStore(["habitat.session.account.ada/draft": Data("ada's draft".utf8)])
        let sessions = SessionStore<AccountsApp>(store: store, secrets: secrets, accountData: data)
        let stack = makeAccountsStack()
        stack.login(user: .ada, token: memberToken(.ada, 1))
        try stack.save(to: sessions)
        stack.login(user: .grace, token: memberToken(.grace, 2))
        store.failNextWrites(1)
        #expect(throws: SnapshotError.self) { try stack.save(to: sessions) }
        #expect(!secrets.contains("ada#1"), "the replaced account's token went first")
        #expect(!secrets.contains("grace#2"), "the new token was taken back")
        #expect(data.contents.isEmpty, "and the replaced account's data")
        let relaunched = makeAccountsStack()
        try relaunched.restore(from: sessions)
        #expect(relaunched.current.accounts.isEmpty, "nobody signed in: never ada back")
        try stack.save(to: sessions)
        let next = makeAccountsStack()
        try next.restore(from: sessions)
        #expect(next.current.session?.user == .grace && next.current.session?.token == memberToken(.grace, 2), "the next save goes through")
    }

    @Test func anItemTheSecretStoreRefusesFailsTheSaveAndLosesNothing() throws {
        let secrets = RefusingDeletes(refusing: "habitat.session.token.grace", writes: true)
        let sessions = SessionStore<AccountsApp>(store: InMemoryStore(), secrets: secrets)
        let stack = makeAccountsStack()
        stack.login(user: .ada, token: memberToken(.ada, 1))
        try stack.save(to: sessions)
        let before = try secrets.secret(forKey: "habitat.session.token")
        stack.addAccount(user: .grace, token: memberToken(.grace, 2))
        #expect(throws: SnapshotError.store(.unavailable(key: "habitat.session.token.grace", reason: "refused by the test"))) {
            try stack.save(to: sessions)
        }
        #expect(try secrets.secret(forKey: "habitat.session.token") == before, "the index is put back")
        let snapshot = try #require(try sessions.load())
        #expect(snapshot.session?.user == .ada && snapshot.session?.token == memberToken(.ada, 1))
        #expect(snapshot.otherAccounts.isEmpty)
    }

    @Test func aDataStoreThatRefusesThePurgeFailsTheSaveButTheSignOutStands() throws {
        let data = MockKeyValueStore(["habitat.session.account.ada/draft": Data("ada's draft".utf8)])
        let secrets = MockSecretStore()
        let sessions = SessionStore<AccountsApp>(store: InMemoryStore(), secrets: secrets, accountData: data)
        let stack = makeAccountsStack()
        stack.login(user: .ada, token: memberToken(.ada, 1))
        try stack.save(to: sessions)
        stack.logout()
        data.failNext(1)
        #expect(throws: SnapshotError.self) { try stack.save(to: sessions) }
        #expect(!secrets.keys.contains("habitat.session.token.ada") && secrets.contains("ada#1") == false, "the token went first")
        #expect(data.contents.keys.contains("habitat.session.account.ada/draft"), "the purge was refused")
        try stack.save(to: sessions)
        #expect(data.contents.isEmpty, "the next save purges it")
        #expect(secrets.keys.isEmpty)
        let relaunched = makeAccountsStack()
        try relaunched.restore(from: sessions)
        #expect(relaunched.current.session == nil, "a relaunch is signed out")
    }

    @Test func aPurgeLeftUndoneIsMadeByTheNextLaunch() throws {
        let data = MockKeyValueStore()
        let sessions = SessionStore<AccountsApp>(store: InMemoryStore(), secrets: MockSecretStore(), accountData: data)
        let stack = threeAccounts()
        try stack.save(to: sessions)
        try sessions.accountData(for: "alan").setData(Data("alan's draft".utf8), forKey: "draft")
        try sessions.accountData(for: "grace").setData(Data("grace's draft".utf8), forKey: "draft")
        stack.logout(account: "alan")
        data.failNext(1)
        #expect(throws: SnapshotError.self) { try stack.save(to: sessions) }
        let relaunched = makeAccountsStack()
        try relaunched.restore(from: sessions)
        #expect(relaunched.current.accounts.map(\.user.id) == ["grace", "ada"])
        #expect(try sessions.accountData(for: "alan").keys().isEmpty, "the launch purged alan's data")
        #expect(try sessions.accountData(for: "grace").data(forKey: "draft") == Data("grace's draft".utf8), "and only alan's")
    }

    @Test func oneAccountWritesNoAccountList() throws {
        let files = try AccountFiles()
        let stack = makeAccountsStack()
        stack.login(user: .ada, token: memberToken(.ada, 1))
        try stack.save(to: files.sessions)
        #expect(try files.secretFiles() == ["habitat.session.token", "habitat.session.token.ada"], "the index and the one account's item")
        let json = try String(decoding: Data(contentsOf: files.directory.file("session.json")), as: UTF8.self)
        #expect(!json.contains("accounts"))
    }
}

extension URL {
    /// Whether the file's bytes contain `needle`.
    func contentsContain(_ needle: String) throws -> Bool {
        try Data(contentsOf: self).range(of: Data(needle.utf8)) != nil
    }
}

/// A secret store that refuses to delete one key, as a crash before that delete would leave it,
/// or (`writes`) to write it, as a full Keychain would.
final class RefusingDeletes: SecretStore, @unchecked Sendable {
    // Safe: `refused` is touched only with `lock` held; `base` is Sendable.
    private let lock = NSLock()
    private var refused: String?
    private var allowed: Int
    private let writes: Bool
    let base = MockSecretStore()

    /// Refuses deletes (or, with `writes`, writes) of `key`, after letting `allowing` through.
    init(refusing key: String, writes: Bool = false, allowing: Int = 0) {
        refused = key
        self.writes = writes
        allowed = allowing
    }

    var refusing: String? {
        get { lock.withLock { refused } }
        set { lock.withLock { refused = newValue } }
    }

    func secret(forKey key: String) throws(StoreError) -> Data? { try base.secret(forKey: key) }

    func setSecret(_ secret: Data?, forKey key: String) throws(StoreError) {
        let refuse = lock.withLock {
            guard (secret == nil) != writes, key == refused else { return false }
            allowed -= 1
            return allowed < 0
        }
        if refuse { throw .unavailable(key: key, reason: "refused by the test") }
        try base.setSecret(secret, forKey: key)
    }
}
