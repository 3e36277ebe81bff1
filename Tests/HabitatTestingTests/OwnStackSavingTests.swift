import Foundation
import Habitat
import HabitatPersistence
import HabitatTesting
import Testing
import XCTest

// The promise under test: after `enableAutosave(to:)`, every login and logout of *that* stack is
// saved, and a store in memory is used as named, whatever test shape runs the code (a stack of
// the test's own or the app's global one; inside a trait's scope or not; Swift Testing or
// XCTest; autosave or an explicit save). A test's own stack inside a trait saved nothing once
// (issue 58): the trait's autosave only listens to the stack it scopes.

/// A stack a test makes itself, as ios-oss's and Cely's own tests do.
private func ownStack() -> EnvironmentStack<LedgerApp> {
    EnvironmentStack(HabitatEnvironment(services: Services(label: "own")))
}

/// Logs in, checks the store holds the user, logs out, checks it holds nobody.
private func loginAndLogoutAreSaved(on stack: EnvironmentStack<LedgerApp>, to store: SessionStore<LedgerApp>) async throws {
    stack.enableAutosave(to: store)
    stack.login(user: ada, token: AuthToken("own-1"))
    await stack.flushAutosave()
    let saved = try #require(try store.load()?.session, "the login was saved to the store named")
    #expect(saved.user == ada)
    #expect(saved.token == AuthToken("own-1"))
    stack.logout()
    await stack.flushAutosave()
    #expect(try store.load()?.session == nil, "the logout was saved too")
}

@Suite struct OwnStackSavingTests {
    @Test func aTestsOwnStackAutosavesWithoutATrait() async throws {
        try await loginAndLogoutAreSaved(on: ownStack(), to: .inMemory())
    }

    @Test(.environment(ledgerEnvironment, services: Services()))
    func aTestsOwnStackAutosavesInsideATraitsScope() async throws {
        try await loginAndLogoutAreSaved(on: ownStack(), to: .inMemory())
    }

    @Test(.environment(ledgerEnvironment, services: Services()))
    func aTestsOwnStackSavesExplicitlyInsideATraitsScope() throws {
        let stack = ownStack()
        let store = SessionStore<LedgerApp>.inMemory()
        stack.login(user: grace, token: AuthToken("own-2"))
        try stack.save(to: store)
        #expect(try store.load()?.session?.user == grace)
        try stack.logout(savingTo: store)
        #expect(try store.load()?.session == nil)
    }

    @Test(.environment(ledgerEnvironment, services: Services()))
    func aTestsOwnStacksSavesAreInTheLedgerInTheStateSaved() async throws {
        let stack = ownStack()
        stack.enableAutosave(to: .inMemory())
        stack.login(user: ada, token: AuthToken("own-3"))
        await stack.flushAutosave()
        let ledger = ledgerEnvironment.testLedger
        #expect(ledger.saved.last?.session?.user == ada)
        #expect(ledger.saved.last?.session?.state == .authenticated, "saved right after a login: authenticated, not restored")
    }

    @Test(.environment(ledgerEnvironment, services: Services()))
    func aTestsOwnStackNeverWritesTheAppsFilesInsideATraitsScope() async throws {
        let (appSessions, directory) = try appSessionStore()
        defer { try? FileManager.default.removeItem(at: directory) }
        let stack = ownStack()
        stack.enableAutosave(to: appSessions)
        stack.login(user: ada, token: AuthToken("own-4"))
        await stack.flushAutosave()
        #expect(try appSessions.load() == nil, "a durable store is the test's own in its scope")
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("session.json").path))
        #expect(ledgerEnvironment.testLedger.saved.last?.session?.user == ada, "saved to the test's own store")
    }

    @Test(.environment(ledgerEnvironment, services: Services()))
    func theScopedStacksLedgerSaysAuthenticatedAfterALogin() throws {
        let store = SessionStore<LedgerApp>.inMemory()
        ledgerEnvironment.enableAutosave(to: store)
        ledgerEnvironment.login(user: grace, token: AuthToken("own-5"))
        #expect(try store.load()?.session?.user == grace)
        #expect(ledgerEnvironment.testLedger.saved.last?.session?.state == .authenticated)
        try ledgerEnvironment.save(to: store)
        #expect(ledgerEnvironment.testLedger.saved.map { $0.session?.state } == [.authenticated, .authenticated])
    }
}

/// The same promise from XCTest: a test case's own stack, and the global stack in the test's
/// scope made by `EnvironmentTestCase`.
final class OwnStackSavingXCTests: EnvironmentTestCase<LedgerApp> {
    override func setUpEnvironment() -> (EnvironmentStack<LedgerApp>, HabitatEnvironment<LedgerApp>)? {
        (ledgerEnvironment, .test(services: Services(label: "xctest")))
    }

    func testATestsOwnStackAutosaves() async throws {
        let stack = ownStack()
        let store = SessionStore<LedgerApp>.inMemory()
        stack.enableAutosave(to: store)
        stack.login(user: ada, token: AuthToken("xc-1"))
        await stack.flushAutosave()
        XCTAssertEqual(try store.load()?.session?.user, ada)
        stack.logout()
        await stack.flushAutosave()
        XCTAssertNil(try store.load()?.session)
    }

    func testATestsOwnStackSavesExplicitly() throws {
        let stack = ownStack()
        let store = SessionStore<LedgerApp>.inMemory()
        stack.login(user: grace, token: AuthToken("xc-2"))
        try stack.save(to: store)
        XCTAssertEqual(try store.load()?.session?.user, grace)
    }

    func testTheScopedGlobalStackSavesExplicitly() throws {
        let store = SessionStore<LedgerApp>.inMemory()
        ledgerEnvironment.login(user: grace, token: AuthToken("xc-3"))
        try ledgerEnvironment.save(to: store)
        XCTAssertEqual(try store.load()?.session?.user, grace)
    }
}

