import Foundation
import Habitat
import HabitatPersistence
import HabitatTesting
import Testing

enum LedgerApp: EnvironmentSchema {
    typealias Services = HabitatTestingTests.Services
    typealias User = HabitatTestingTests.User
}

let ledgerEnvironment = EnvironmentStack<LedgerApp>(live: HabitatEnvironment(services: Services()))

/// The store an app names for its sessions: files in a directory of its own (here a temporary
/// one, so a failure of the quarantine can't touch anything real).
func appSessionStore() throws -> (SessionStore<LedgerApp>, URL) {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("habitat-ledger-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    let sessions = SessionStore<LedgerApp>(
        store: try JSONFileStore(url: directory.appendingPathComponent("session.json")),
        secrets: try FileSecretStore(directory: directory.appendingPathComponent("secrets"))
    )
    return (sessions, directory)
}

let ada = User(id: 1, name: "Ada")
let grace = User(id: 2, name: "Grace")

/// Inside a test's scope the stack saves and restores through a store of the test's own, and
/// the test reads what its code saved and restored, in order.
@Suite struct TestStorageTests {
    @Test(.environment(ledgerEnvironment, services: Services()))
    func autosaveInATestSavesToTheTestsOwnStoreAndTheLedgerSaysWhat() throws {
        let (appSessions, directory) = try appSessionStore()
        defer { try? FileManager.default.removeItem(at: directory) }
        ledgerEnvironment.enableAutosave(to: appSessions)
        ledgerEnvironment.login(user: ada, token: AuthToken("t1"))
        #expect(ledgerEnvironment.testLedger.saved.last?.session?.user == ada)
        #expect(ledgerEnvironment.testLedger.saved.last?.session?.token == AuthToken("t1"))
        ledgerEnvironment.logout()
        #expect(ledgerEnvironment.testLedger.saved.count == 2)
        #expect(ledgerEnvironment.testLedger.saved.last?.session == nil, "the logout's save: signed out")
        #expect(try appSessions.load() == nil, "the app's store was never written")
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("session.json").path))
    }

    @Test(.environment(ledgerEnvironment, services: Services()))
    func aSecondLaunchInTheTestRestoresWhatTheFirstSaved() throws {
        let (appSessions, directory) = try appSessionStore()
        defer { try? FileManager.default.removeItem(at: directory) }
        #expect(ledgerEnvironment.restoreAtLaunch(from: appSessions).snapshot == nil, "a fresh store: nothing saved")
        ledgerEnvironment.login(user: grace, token: AuthToken("t2"))
        try ledgerEnvironment.save(to: appSessions)
        ledgerEnvironment.logout()
        let relaunch = ledgerEnvironment.restoreAtLaunch(from: appSessions)
        #expect(relaunch.snapshot?.session?.user == grace)
        #expect(ledgerEnvironment.current.currentUser == grace)
        let entries = ledgerEnvironment.testLedger
        #expect(entries.restored.count == 2)
        #expect(entries.restored.first! == nil && entries.restored.last??.session?.user == grace)
        #expect(entries.saved.map { $0.session?.user } == [grace])
    }

    @Test(.environment(ledgerEnvironment, services: Services()), arguments: 1...6)
    func parallelTestsNeverSeeEachOthersSaves(id: Int) throws {
        let (appSessions, directory) = try appSessionStore()
        defer { try? FileManager.default.removeItem(at: directory) }
        let me = User(id: id, name: "User \(id)")
        ledgerEnvironment.login(user: me, token: AuthToken("t\(id)"))
        try ledgerEnvironment.save(to: appSessions)
        ledgerEnvironment.logout()
        #expect(ledgerEnvironment.restoreAtLaunch(from: appSessions).snapshot?.session?.user == me)
        #expect(ledgerEnvironment.testLedger.saved.count == 1)
    }

    static let named = SessionStore<LedgerApp>.inMemory()

    @Test(.environment(ledgerEnvironment, services: Services()).sessions(named))
    func aStoreTheTestNamesIsUsedAsNamed() throws {
        let (appSessions, directory) = try appSessionStore()
        defer { try? FileManager.default.removeItem(at: directory) }
        ledgerEnvironment.login(user: ada, token: AuthToken("t3"))
        try ledgerEnvironment.save(to: appSessions)
        #expect(try Self.named.load()?.session?.user == ada)
        #expect(try appSessions.load() == nil)
        #expect(ledgerEnvironment.testLedger.saved.count == 1)
    }

    @Test(.environment(ledgerEnvironment, services: Services()))
    func theLedgerNeverPrintsATokensSecret() throws {
        let (appSessions, directory) = try appSessionStore()
        defer { try? FileManager.default.removeItem(at: directory) }
        ledgerEnvironment.login(user: ada, token: AuthToken("ledger-secret-9f2c"))
        try ledgerEnvironment.save(to: appSessions)
        let ledger = ledgerEnvironment.testLedger
        var dumped = ""
        dump(ledger, to: &dumped)
        for text in [String(describing: ledger), String(reflecting: ledger), dumped, "\(ledger.entries)"] {
            #expect(!text.contains("ledger-secret-9f2c"))
        }
        #expect(ledger.saved.last?.session?.token.secret == "ledger-secret-9f2c", "the secret is there, for assertions")
    }

    @Test(.environment(ledgerEnvironment, services: Services()))
    func aStoreInMemoryIsTheTestsOwnAndUsedAsNamed() throws {
        let mine = SessionStore<LedgerApp>.inMemory()
        ledgerEnvironment.enableAutosave(to: mine)
        ledgerEnvironment.login(user: grace, token: AuthToken("t4"))
        #expect(try mine.load()?.session?.user == grace, "autosaved, at once, to the store the test gave")
        try ledgerEnvironment.save(to: mine)
        ledgerEnvironment.logout()
        #expect(try mine.load()?.session == nil)
        #expect(ledgerEnvironment.testLedger.saved.map { $0.session?.user } == [grace, grace, nil])
    }

    /// A test of launch code builds the app's stores over the app's real paths: in its scope,
    /// nothing is created there (the saves go to the test's own store); a write the test makes
    /// through the store itself creates the directory then.
    @Test(.environment(ledgerEnvironment, services: Services()))
    func buildingTheAppsStoresInATestCreatesNothingInTheRealDirectory() async throws {
        let parent = FileManager.default.temporaryDirectory.appendingPathComponent("habitat-real-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: parent) }
        let data = parent.appendingPathComponent("Application Support")
        let plain = try JSONFileStore(url: data.appendingPathComponent("session.json"))
        let secrets = try FileSecretStore(directory: data.appendingPathComponent("secrets"))
        let sessions = SessionStore<LedgerApp>(store: plain, secrets: secrets)
        #expect(ledgerEnvironment.restoreAtLaunch(from: sessions).snapshot == nil)
        ledgerEnvironment.enableAutosave(to: sessions)
        ledgerEnvironment.login(user: ada, token: AuthToken("launch"))
        try ledgerEnvironment.save(to: sessions)
        await ledgerEnvironment.flushAutosave()
        #expect(try plain.data(forKey: "anything") == nil, "a read of a missing directory finds nothing")
        #expect(try secrets.secret(forKey: "anything") == nil)
        try secrets.setSecret(nil, forKey: "anything")
        #expect(!FileManager.default.fileExists(atPath: parent.path), "nothing was created at the app's paths")
        #expect(ledgerEnvironment.testLedger.saved.last?.session?.user == ada, "the saves went to the test's own store")

        try plain.setData(Data("1".utf8), forKey: "written")
        try secrets.setSecret(Data("s".utf8), forKey: "written")
        #expect(try plain.data(forKey: "written") == Data("1".utf8), "the test's own write creates the directory")
        #expect(try secrets.secret(forKey: "written") == Data("s".utf8))
        let mode = try FileManager.default.attributesOfItem(atPath: data.appendingPathComponent("secrets").path)[.posixPermissions] as? Int
        #expect(mode == 0o700, "created owner-only, as the initialiser would have")
    }

    @Test func outsideATestsScopeBuildingAStoreCreatesItsDirectory() throws {
        let parent = FileManager.default.temporaryDirectory.appendingPathComponent("habitat-real-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: parent) }
        _ = try FileSecretStore(directory: parent.appendingPathComponent("secrets"))
        _ = try JSONFileStore(url: parent.appendingPathComponent("data/session.json"))
        #expect(FileManager.default.fileExists(atPath: parent.appendingPathComponent("secrets").path))
        #expect(FileManager.default.fileExists(atPath: parent.appendingPathComponent("data").path))
    }

    @Test func outsideATestsScopeTheLedgerIsEmpty() {
        #expect(ledgerEnvironment.testLedger.entries.isEmpty)
    }
}
