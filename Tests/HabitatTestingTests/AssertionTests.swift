import Foundation
import Habitat
import HabitatPersistence
import HabitatPersistenceTesting
import HabitatTesting
import Testing

@Suite(.environment(AppEnvironment) { $0 = .test(services: Services(), config: Config()) })
struct AssertionTests {
    @Test func expectChangesPassesWhenTheKindsMatch() async throws {
        let changes = await expectChanges(in: AppEnvironment, [.push, .login, .pop]) {
            AppEnvironment.push { $0.config.greeting = "x" }
            AppEnvironment.login(user: .ada, token: AuthToken("t"))
            AppEnvironment.pop()
        }
        #expect(changes.count == 3)
        #expect(changes[1].new.currentUser == .ada)
    }

    @Test func expectChangesReportsAMismatchWithOldAndNew() async {
        let failures = await CapturedTestFailures.capture {
            await expectChanges(in: AppEnvironment, [.push]) {
                AppEnvironment.login(user: .ada, token: AuthToken("t"))
            }
        }
        let text = failures.joined()
        #expect(failures.count == 1)
        #expect(text.contains("expected changes [push], got [login]"))
        #expect(text.contains("login: user nil (logged out) -> User(id: 1, name: \"Ada\")"))
    }

    @Test func expectLoginPassesForTheRightUser() async {
        await expectLogin(in: AppEnvironment, of: .ada) {
            AppEnvironment.login(user: .ada, token: AuthToken("t"))
        }
    }

    @Test func expectLoginReportsTheWrongUser() async {
        let failures = await CapturedTestFailures.capture {
            await expectLogin(in: AppEnvironment, of: .ada) {
                AppEnvironment.login(user: .grace, token: AuthToken("t"))
            }
        }
        #expect(failures.joined().contains("but the current user is User(id: 2, name: \"Grace\")"))
    }

    @Test func expectLoginReportsAMissingLogin() async {
        let failures = await CapturedTestFailures.capture {
            await expectLogin(in: AppEnvironment, of: .ada) {
                AppEnvironment.push { $0.config.greeting = "no login here" }
            }
        }
        #expect(failures.joined().contains("no login happened"))
    }

    @Test func assertionsRethrowAndStillStopRecording() async {
        struct Boom: Error {}
        await #expect(throws: Boom.self) {
            try await expectChanges(in: AppEnvironment, []) { throw Boom() }
        }
    }
}

@Suite struct MockStoreTests {
    @Test func theMockRecordsEveryOperationInOrder() throws {
        let store = MockKeyValueStore()
        try store.set(1, for: StoreKey<Int>("a"))
        _ = try store.data(forKey: "a")
        _ = try store.keys()
        try store.removeValue(forKey: "a")
        #expect(store.operations == [.write(["a": .written]), .read("a"), .listKeys, .write(["a": .removed])])
        #expect(store.contents.isEmpty)
        store.clearOperations()
        #expect(store.operations.isEmpty)
    }

    @Test func theMockFailsTheNextOperationsAndChangesNothing() throws {
        let store = MockKeyValueStore(["a": Data("1".utf8)])
        store.failNext(2, with: .unwritable(path: "mock", reason: "disk full"))
        #expect(throws: StoreError.unwritable(path: "mock", reason: "disk full")) { try store.setData(nil, forKey: "a") }
        #expect(throws: StoreError.unwritable(path: "mock", reason: "disk full")) { try store.data(forKey: "a") }
        #expect(try store.data(forKey: "a") == Data("1".utf8), "the third operation works, and nothing changed")
        #expect(store.operations.count == 3)
    }

    @Test func aFailingStoreMakesSavingASessionFailWithATypedError() throws {
        let store = MockKeyValueStore()
        let secrets = MockSecretStore()
        let sessions = SessionStore<TestingApp>(store: store, secrets: secrets)
        let env = HabitatEnvironment<TestingApp>.test(services: Services(), config: Config())
            .with(\.session, UserSession(user: .ada, token: AuthToken("tok-mock-SECRET")))
        store.failNext()
        #expect(throws: SnapshotError.store(.unavailable(key: "MockKeyValueStore", reason: "a failure injected by the test"))) { try sessions.save(env) }
        #expect(
            secrets.operations == [
                .read("habitat.session.token"), .read("habitat.session.token."),
                .write("habitat.session.token"), .write("habitat.session.token."),
                .delete("habitat.session.token."), .delete("habitat.session.token"),
            ],
            "the index and the account's item were read (to pair the token), written before the snapshot, and taken back when the snapshot failed"
        )
        #expect(!secrets.contains("tok-mock-SECRET"), "a failed save leaves no token behind")
        try sessions.save(env)
        #expect(secrets.contains("tok-mock-SECRET"))
        #expect(!store.contents.values.contains { $0.range(of: Data("tok-mock-SECRET".utf8)) != nil })
        try sessions.save(env.with(\.session, nil))
        #expect(secrets.keys.isEmpty)
        #expect(secrets.operations.last == .delete("habitat.session.token"))
    }

    @Test func theSecretMockFailsOnCommand() {
        let secrets = MockSecretStore()
        secrets.failNext()
        #expect(throws: StoreError.unavailable(key: "MockSecretStore", reason: "a failure injected by the test")) { try secrets.setSecret(Data(), forKey: "k") }
        #expect(secrets.keys.isEmpty)
    }
}
