import Foundation
import Habitat
import HabitatPersistence
import HabitatPersistenceTesting
import HabitatTesting
import Testing

/// `restoreAtLaunch(from:)`: a launch that reports what it found and never needs a `catch`.
@Suite struct LaunchRestoreTests {
    func fileSessions(in directory: TemporaryDirectory) throws -> SessionStore<TestApp> {
        SessionStore(
            store: try JSONFileStore(url: directory.file("session.json")),
            secrets: try FileSecretStore(directory: directory.file("secrets"))
        )
    }

    @Test func aSavedSessionIsRestored() throws {
        let directory = try TemporaryDirectory()
        let sessions = try fileSessions(in: directory)
        try sessions.save(makeEnvironment().with(\.session, UserSession(user: .ada, token: AuthToken("t"))))
        let stack = makeStack()
        let launch = stack.restoreAtLaunch(from: sessions)
        #expect(launch.problem == nil)
        #expect(launch.snapshot?.session?.user == .ada)
        #expect(stack.current.session?.state == .restored)
    }

    @Test func aFirstLaunchFindsNothing() throws {
        let directory = try TemporaryDirectory()
        let stack = makeStack()
        let launch = stack.restoreAtLaunch(from: try fileSessions(in: directory))
        guard case .nothingSaved = launch else {
            Issue.record("expected .nothingSaved, got \(launch)")
            return
        }
        #expect(launch.problem == nil)
        #expect(stack.depth == 1)
    }

    /// A damaged file is moved aside, the app starts logged out and goes on, and the next save
    /// writes a good file again.
    @Test func aDamagedFileIsSetAsideAndTheAppStartsFresh() throws {
        let directory = try TemporaryDirectory()
        let garbage = Data("{\"habitat.session\": [1, 2".utf8)
        try garbage.write(to: directory.file("session.json"))
        let sessions = try fileSessions(in: directory)
        let stack = makeStack()
        let launch = stack.restoreAtLaunch(from: sessions)
        guard case .setAside(let movedTo, let problem) = launch else {
            Issue.record("expected .setAside, got \(launch)")
            return
        }
        #expect(movedTo.hasPrefix(directory.file("session.json").path + ".corrupt-"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: movedTo)) == garbage, "kept for a bug report")
        #expect(launch.problem == problem)
        #expect(stack.current.session == nil)
        let line = "\(launch)"
        #expect(line.hasPrefix("set aside: "))
        #expect(line.components(separatedBy: movedTo).count == 2, "names the set-aside copy once: \(line)")

        stack.login(user: .grace, token: AuthToken("g"))
        try stack.save(to: sessions)
        #expect(makeStack().restoreAtLaunch(from: sessions).snapshot?.session?.user == .grace)
    }

    /// A snapshot from a newer app version stays as it is, for that version.
    @Test func aNewerSnapshotIsLeftForANewerApp() throws {
        let store = InMemoryStore()
        try SessionStore<TestApp>(store: store, secrets: InMemorySecretStore(), version: 3)
            .save(makeEnvironment().with(\.session, UserSession(user: .ada, token: AuthToken("t"))))
        let before = store.contents
        let stack = makeStack()
        let launch = stack.restoreAtLaunch(
            from: SessionStore(store: store, secrets: InMemorySecretStore(), version: 2)
        )
        guard case .failed(.unsupportedVersion(_, 3, 2)) = launch else {
            Issue.record("expected .failed(.unsupportedVersion), got \(launch)")
            return
        }
        #expect(store.contents == before)
        #expect(stack.current.session == nil)
    }

    /// A downgrade destroys nothing: after a launch that found a newer app's snapshot, the
    /// older app runs in memory, and none of its saves (autosave, `save(to:)`, a logout's) writes
    /// over that snapshot or deletes its tokens: each throws `unsupportedVersion`. `clear()` is
    /// the app's way to start over, and saves go through after it. (Before, the first autosave
    /// wrote the older snapshot over it and deleted the newer app's token.)
    @Test func anOlderAppsSavesNeverWriteOverANewerSnapshot() async throws {
        let store = InMemoryStore()
        let secrets = InMemorySecretStore()
        try SessionStore<TestApp>(store: store, secrets: secrets, version: 3)
            .save(makeEnvironment().with(\.session, UserSession(user: .ada, token: AuthToken("newer"))))
        let (before, tokensBefore) = (store.contents, secrets.keys)
        let older = SessionStore<TestApp>(store: store, secrets: secrets, version: 2)
        let stack = makeStack()
        guard case .failed(.unsupportedVersion) = stack.restoreAtLaunch(from: older) else {
            Issue.record("expected .failed(.unsupportedVersion)")
            return
        }
        let errors = ErrorLog()
        stack.enableAutosave(to: older) { errors.append($0) }
        stack.updateConfig { $0.timeout = 5 }
        stack.login(user: .grace, token: AuthToken("older"))
        await stack.flushAutosave()
        #expect(errors.entries.allSatisfy { $0 == .unsupportedVersion(key: "habitat.session", found: 3, newest: 2) } && !errors.entries.isEmpty)
        #expect(throws: SnapshotError.unsupportedVersion(key: "habitat.session", found: 3, newest: 2)) { try stack.save(to: older) }
        #expect(throws: SnapshotError.unsupportedVersion(key: "habitat.session", found: 3, newest: 2)) { try stack.logout(savingTo: older) }
        #expect(store.contents == before && secrets.keys == tokensBefore, "the newer app's session, whole")
        #expect(stack.current.session == nil, "the logout stands in memory")

        try older.clear()
        stack.login(user: .grace, token: AuthToken("older"))
        try stack.save(to: older)
        #expect(makeStack().restoreAtLaunch(from: older).snapshot?.session?.user == .grace)
    }

    /// A plain store that can't be read right now is a failure that deletes nothing.
    @Test func anUnreadableStoreDeletesNothing() throws {
        let store = MockKeyValueStore()
        let secrets = InMemorySecretStore()
        try SessionStore<TestApp>(store: store, secrets: secrets).save(makeEnvironment().with(\.session, UserSession(user: .ada, token: AuthToken("t"))))
        let before = store.contents
        store.failNext(with: .unreadable(path: "session.json", reason: "I/O error"))
        let launch = makeStack().restoreAtLaunch(from: SessionStore(store: store, secrets: secrets))
        guard case .failed(.store(.unreadable)) = launch else {
            Issue.record("expected .failed(.store(.unreadable)), got \(launch)")
            return
        }
        #expect(store.contents == before)
        #expect(try SessionStore<TestApp>(store: store, secrets: secrets).load()?.session?.token.secret == "t")
    }

    /// A secret store that can't be read right now (a locked device) is not "no token": the
    /// user's data is restored, the session waits for its token, and nothing is deleted.
    @Test func anUnavailableSecretStoreRestoresTheUserAwaitingTheToken() throws {
        let store = InMemoryStore()
        let secrets = MockSecretStore()
        let sessions = SessionStore<TestApp>(store: store, secrets: secrets)
        try sessions.save(makeEnvironment().with(\.session, UserSession(user: .ada, token: AuthToken("t"))))
        let before = store.contents
        secrets.setUnavailable(true)
        let stack = makeStack()
        let launch = stack.restoreAtLaunch(from: sessions)
        guard case .awaitingToken(let snapshot, .store(.unavailable(_, "the device is locked"))) = launch else {
            Issue.record("expected .awaitingToken, got \(launch)")
            return
        }
        #expect(snapshot.session?.user == .ada)
        #expect(launch.snapshot?.session?.state == .awaitingToken)
        #expect(stack.current.currentUser == .ada, "the user's data is there")
        #expect(stack.current.session?.state == .awaitingToken)
        #expect(stack.current.session?.token.secret == "", "and no token yet")
        #expect(store.contents == before)
        #expect(!secrets.operations.contains { if case .delete = $0 { true } else { false } })

        secrets.setUnavailable(false)
        #expect(stack.restoreAtLaunch(from: sessions).problem == nil)
        #expect(stack.current.session?.state == .restored, "a later restore completes the session")
        #expect(stack.current.session?.token.secret == "t")
    }
}
