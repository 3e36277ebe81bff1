import Foundation
import Habitat
import HabitatPersistence
import HabitatPersistenceTesting
import HabitatKeychain
import HabitatTesting
import Testing

/// No public value prints its secret, by any printing path: `print`, `debugPrint`, `dump`,
/// `String(reflecting:)`, or a walk of its `Mirror` (what reflection-based loggers and
/// pretty-printers do). Each public type that can hold a token is built holding a known one;
/// the rest are listed as holding none, and a public type in neither list fails the suite, so a
/// new type can't slip past it.
@Suite struct RedactionTests {
    static let secret = "s3cr3t-7d1e-redaction-probe"
    static let token = AuthToken(secret, expiresAt: fixedDate)

    /// Public types that never hold a secret, with why.
    static let holdNoSecret: [String: String] = [
        "AuthState": "a case name", "AwaitingTokenResolution": "an outcome and a store error",
        "EnvironmentChangeKind": "a name", "EnvironmentContext": "a case name",
        "FrameOrigin": "a file and a line", "Lens": "two closures", "NoConfig": "empty", "NoUser": "empty", "ServicesOnly": "no values", "StoreObservation": "a closure that stops a feed",
        "StoreKey": "a key's name", "LazyService": "a service, built by the app",
        "LazyServiceError": "a message", "KeychainAccessibility": "a case name", "KeychainStatus": "status numbers",
        "Device": "a case name", "JSONFileStore": "snapshots, which never hold the token",
        "InMemoryStore": "snapshots, which never hold the token", "UserDefaultsStore": "snapshots",
        "ScopedStore": "a store and a prefix", "SnapshotMigration": "a closure", "TokenRead": "store errors",
        "UnimplementedError": "an endpoint's name", "EnvironmentTrait": "the test's environment, covered by HabitatEnvironment",
        "TestContextReporter": "no values", "TestFixtures": "no values",
        "EnvironmentSlice": "the app's services, covered by HabitatEnvironment", "StoreFollower": "a timer",
        "MockKeyValueStore": "snapshots", "WriteKind": "a case name", "KeychainCalls": "four closures",
        "KeychainItem": "a service, an account and a group", "Call": "a call's item and status, never its data",
        "LegacyTokenMigration": "an outcome", "SessionError": "account names",
        "TestLedger": "snapshots: their tokens print redacted (TestStorageTests checks it)", "Entry": "a TestLedger entry, as above",
        "ObservableEnvironment": "main-actor mirror of the session: covered by UserSession (macOS 14+)",
        "KeychainProtection": "a case name", "KeychainPromptPolicy": "a case name and a duration",
        "KeychainAuthentication": "how the user was recognised, and the system's opaque context: never a secret",
        "KeychainUnlockError": "a case name and the system's message", "Method": "a case name", "PromptAnswer": "a case name",
    ]

    /// Public types checked below, each holding the secret.
    static let checked: Set<String> = [
        "AuthToken", "UserSession", "HabitatEnvironment", "EnvironmentStack", "EnvironmentChange", "StackFrame",
        "SessionSnapshot", "LaunchRestore", "SessionRefresh", "SessionRefreshOutcome", "RefreshUnconfirmed", "SessionStore",
        "InMemorySecretStore", "FileSecretStore", "KeychainSecretStore", "SimulatedKeychain", "MockSecretStore",
        "Operation", "StoreError", "SnapshotError", "WindowEnvironment", "PublishedEnvironment",
    ]

    @Test func everyPublicTypeIsCheckedOrSaysWhyItHoldsNoSecret() throws {
        let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Sources").standardized
        let declaration = try Regex(#"(?m)^\s*public (?:final )?(?:struct|class|enum|actor) ([A-Za-z_]+)"#)
        var found = Set<String>()
        let files = try #require(FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil))
        for case let file as URL in files where file.pathExtension == "swift" {
            for match in try String(contentsOf: file, encoding: .utf8).matches(of: declaration) {
                found.insert(String(try #require(match.output[1].substring)))
            }
        }
        #expect(found.count > 40)
        let unlisted = found.subtracting(Self.checked).subtracting(Self.holdNoSecret.keys).sorted()
        #expect(unlisted.isEmpty, "public types neither checked for redaction nor said to hold no secret: \(unlisted)")
    }

    @Test func sessionValuesAndTheStack() async throws {
        let stack = makeStack()
        let changes = stack.changes
        stack.login(user: .ada, token: Self.token)
        var iterator = changes.makeAsyncIterator()
        let change = try #require(await iterator.next())
        let session = try #require(stack.current.session)
        expectRedacted(Self.token)
        expectRedacted(session)
        expectRedacted(stack.current)
        expectRedacted(stack)
        expectRedacted(change)
        expectRedacted(stack.frames)
        expectRedacted(SessionRefresh<TestUser>.refreshed(token: Self.token, user: .ada))
        expectRedacted(SessionRefreshOutcome.endedUnconfirmed(.notSaved(problem: .store(.unavailable(key: "k", reason: "locked")))))
        expectRedacted(RefreshUnconfirmed.notSaved(problem: .store(.unavailable(key: "k", reason: "locked"))))
    }

    @MainActor @Test func windowsAndTheSwiftUIBridge() {
        let stack = makeStack()
        stack.login(user: .ada, token: Self.token)
        let window = WindowEnvironment(following: stack)
        #expect(window.stack.current.session?.token.secret == Self.secret)
        expectRedacted(window)
        let object = PublishedEnvironment(stack)
        #expect(object.session?.token.secret == Self.secret)
        expectRedacted(object)
    }

    @Test func snapshotsLaunchesAndSessionStores() throws {
        for secrets in [InMemorySecretStore(), MockSecretStore()] as [any SecretStore] {
            let sessions = SessionStore<TestApp>(store: InMemoryStore(), secrets: secrets)
            try sessions.save(makeEnvironment().with(\.session, UserSession(user: .ada, token: Self.token)))
            let snapshot = try #require(try sessions.load())
            #expect(snapshot.session?.token.secret == Self.secret)
            expectRedacted(snapshot)
            expectRedacted(secrets)
            expectRedacted(sessions)
            let stack = makeStack()
            let launch = stack.restoreAtLaunch(from: sessions)
            expectRedacted(launch)
            expectRedacted(stack)
        }
        let mock = MockSecretStore()
        try mock.setSecret(Data(Self.secret.utf8), forKey: "k")
        expectRedacted(mock.operations)
    }

    @Test func fileAndKeychainSecretStores() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("redaction-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let files = try FileSecretStore(directory: directory)
        try files.setSecret(Data(Self.secret.utf8), forKey: "token")
        expectRedacted(files)

        let keychain = SimulatedKeychain()
        let store = KeychainSecretStore(service: "com.example.app", reportsMissingReliably: true, calls: keychain.calls)
        try store.setSecret(Data(Self.secret.utf8), forKey: "token")
        #expect(try store.secret(forKey: "token") == Data(Self.secret.utf8))
        expectRedacted(store)
        expectRedacted(keychain)
    }

    @Test func errorsFromEveryStore() {
        let errors: [any Error] = [
            StoreError.unavailable(key: "habitat.session.token", reason: "locked"),
            SnapshotError.store(.corrupted(path: "/tmp/session.json", movedTo: "/tmp/session.json.corrupt", reason: "bad")),
            SnapshotError.unsupportedVersion(key: "habitat.session", found: 9, newest: 1),
        ]
        for error in errors {
            expectRedacted(error)
        }
    }

    /// Renders `value` every way a program prints one, and fails where the secret shows.
    func expectRedacted(_ value: Any, sourceLocation: SourceLocation = #_sourceLocation) {
        var dumped = ""
        dump(value, to: &dumped, maxDepth: 12)
        var debugPrinted = ""
        debugPrint(value, to: &debugPrinted)
        var printed = ""
        print(value, to: &printed)
        let renderings = [
            ("print", printed), ("debugPrint", debugPrinted), ("dump", dumped),
            ("String(reflecting:)", String(reflecting: value)), ("String(describing:)", String(describing: value)),
        ]
        for (path, text) in renderings {
            #expect(!text.contains(Self.secret), "\(path) shows the secret: \(text.prefix(600))", sourceLocation: sourceLocation)
        }
        #expect(!mirrorHoldsSecret(value, depth: 0), "a Mirror walk reaches the secret", sourceLocation: sourceLocation)
    }

    /// Whether a walk of `value`'s mirror reaches the secret: as text, or as its bytes.
    func mirrorHoldsSecret(_ value: Any, depth: Int) -> Bool {
        if let text = value as? String { return text.contains(Self.secret) }
        if let data = value as? Data { return data.range(of: Data(Self.secret.utf8)) != nil }
        if let bytes = value as? [UInt8] { return Data(bytes).range(of: Data(Self.secret.utf8)) != nil }
        guard depth < 12 else { return false }
        return Mirror(reflecting: value).children.contains { mirrorHoldsSecret($0.value, depth: depth + 1) }
    }
}
