import Foundation
import Habitat
import HabitatPersistence
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Puts `damage` where `file` was: "a FIFO", "a symbolic link" (to `target`), or "a file over
/// the limit" (`limit` bytes and one more).
func replace(_ file: URL, with damage: String, target: URL? = nil, limit: Int = 0) throws {
    try FileManager.default.removeItem(at: file)
    switch damage {
    case "a FIFO": #expect(mkfifo(file.path, 0o600) == 0)
    case "a symbolic link": try FileManager.default.createSymbolicLink(at: file, withDestinationURL: try #require(target))
    default: try Data(repeating: 7, count: limit + 1).write(to: file)
    }
}

/// What another local user, a crash or an odd file can leave on disk, and what the stores do
/// about it: a typed error naming the path, nothing read from or written to the wrong place,
/// nothing lost.
@Suite struct HostileFileSystemTests {
    // MARK: Directories someone else could change

    /// A directory others can write is refused; a shared sticky one (/tmp) gets advice that
    /// does no harm: not "make it 0700", but "use a directory of your own".
    @Test(arguments: [
        (mode_t(0o777), "it is writable by group or others (mode 777); make it 0700"),
        (mode_t(0o1777), "it is a shared directory (mode 1777) that others can write to; keep the store in a directory of your own inside it"),
    ])
    func aSecretsDirectoryOthersCanWriteIsRefused(mode: mode_t, reason: String) throws {
        let directory = try TemporaryDirectory()
        let secrets = directory.file("secrets")
        try FileManager.default.createDirectory(at: secrets, withIntermediateDirectories: false)
        chmod(secrets.path, mode)
        #expect(throws: StoreError.untrustedDirectory(path: secrets.path, reason: reason)) {
            try FileSecretStore(directory: secrets)
        }
    }

    @Test func aSecretsDirectoryThatBecomesWritableIsRefusedOnTheNextRead() throws {
        let directory = try TemporaryDirectory()
        let store = try FileSecretStore(directory: directory.file("secrets"))
        try store.setSecret(Data("mine".utf8), forKey: "token")
        chmod(store.directory.path, 0o770)
        // Another user of the group could have swapped the file: it is not read.
        #expect(throws: StoreError.self) { try store.secret(forKey: "token") }
        #expect(throws: StoreError.self) { try store.setSecret(Data("new".utf8), forKey: "token") }
        chmod(store.directory.path, 0o700)
        #expect(try store.secret(forKey: "token") == Data("mine".utf8), "nothing was lost")
    }

    @Test func aSecretsDirectoryThatIsASymlinkIsRefused() throws {
        let directory = try TemporaryDirectory()
        let elsewhere = directory.file("environment-readable")
        try FileManager.default.createDirectory(at: elsewhere, withIntermediateDirectories: false)
        let link = directory.file("secrets")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: elsewhere)
        #expect(throws: StoreError.untrustedDirectory(path: link.path, reason: "it is a symbolic link")) {
            try FileSecretStore(directory: link)
        }
    }

    @Test func aStoreDirectoryOthersCanWriteIsRefused() throws {
        let directory = try TemporaryDirectory()
        let shared = directory.file("shared")
        try FileManager.default.createDirectory(at: shared, withIntermediateDirectories: false)
        chmod(shared.path, 0o777)
        #expect {
            try JSONFileStore(url: shared.appendingPathComponent("store.json"))
        } throws: { error in
            guard case .untrustedDirectory(let path, let reason) = error as? StoreError else { return false }
            return path == shared.path && reason.contains("writable by group or others")
        }
    }

    // MARK: Files that are not what they seem

    @Test func aTokenFileThatIsASymlinkIsNeverFollowed() throws {
        let directory = try TemporaryDirectory()
        let secrets = try FileSecretStore(directory: directory.file("secrets"))
        let planted = directory.file("attacker-token")
        try Data("attacker".utf8).write(to: planted)
        try FileManager.default.createSymbolicLink(at: secrets.fileURL(forKey: "token"), withDestinationURL: planted)
        #expect(throws: StoreError.notARegularFile(path: secrets.fileURL(forKey: "token").path, found: "a symbolic link")) {
            try secrets.secret(forKey: "token")
        }
        // A session whose token file was swapped for a link: restoring it reports that error,
        // and logs nobody in with the planted token: the session waits for a token it can read.
        let sessions = SessionStore<TestApp>(store: InMemoryStore(), secrets: secrets, key: "s")
        try sessions.save(makeEnvironment().with(\.session, UserSession(user: .ada, token: AuthToken("mine"))))
        let tokenFile = secrets.fileURL(forKey: sessions.tokenKey(forAccount: ""))
        try FileManager.default.removeItem(at: tokenFile)
        try FileManager.default.createSymbolicLink(at: tokenFile, withDestinationURL: planted)
        let snapshot = try #require(try sessions.load())
        #expect(snapshot.tokenProblem == .notARegularFile(path: tokenFile.path, found: "a symbolic link"))
        #expect(snapshot.session?.state == .awaitingToken)
        #expect(snapshot.session?.token.secret == "")
        #expect(FileManager.default.fileExists(atPath: planted.path), "nothing was deleted")
    }

    /// A token file swapped for a link, a FIFO or a file over the limit holds no token to keep:
    /// the session waits for its token (nothing read through it, nothing written), and signing
    /// the account in again replaces the file, which the next launch restores. (Before, that
    /// save failed on reading the file, at every sign-in: the account could never be saved
    /// again until someone removed the file.)
    @Test(arguments: ["a symbolic link", "a FIFO", "a file over the limit"])
    func aDamagedTokenFileIsReplacedWhenTheAccountSignsInAgain(damage: String) throws {
        let directory = try TemporaryDirectory()
        let secrets = try FileSecretStore(directory: directory.file("secrets"))
        let sessions = SessionStore<TestApp>(store: InMemoryStore(), secrets: secrets)
        try sessions.save(makeEnvironment().with(\.session, UserSession(user: .ada, token: AuthToken("mine"))))
        let tokenFile = secrets.fileURL(forKey: sessions.tokenKey(forAccount: ""))
        let planted = directory.file("planted")
        try Data("planted".utf8).write(to: planted)
        try replace(tokenFile, with: damage, target: planted, limit: secrets.maximumSecretSize)
        let stack = makeStack()
        try stack.restore(from: sessions)
        #expect(stack.current.session?.state == .awaitingToken, "waiting: nothing read through it")

        stack.login(user: .ada, token: AuthToken("again"))
        try stack.save(to: sessions)
        let relaunched = makeStack()
        try relaunched.restore(from: sessions)
        #expect(relaunched.current.session?.token.secret == "again" && relaunched.current.session?.state == .restored)
        #expect(try Data(contentsOf: planted) == Data("planted".utf8), "what a link pointed to is untouched")
    }

    /// A token file damaged while the app runs (the stack knows what it saved there) stops no
    /// save either: the save finds the stored session changed and the stack takes it, waiting
    /// for its token as a relaunch would, with the configuration saved; signing in again
    /// replaces the file. (Before, every save of that stack failed on reading the file.)
    @Test func aTokenFileDamagedWhileTheAppRunsStopsNoSave() throws {
        let directory = try TemporaryDirectory()
        let secrets = try FileSecretStore(directory: directory.file("secrets"))
        let sessions = SessionStore<TestApp>(store: try JSONFileStore(url: directory.file("session.json")), secrets: secrets)
        let app = makeStack()
        app.login(user: .ada, token: AuthToken("mine"))
        try app.save(to: sessions)
        try replace(secrets.fileURL(forKey: sessions.tokenKey(forAccount: "")), with: "a FIFO")

        app.updateConfig { $0.timeout = 5 }
        try app.save(to: sessions)
        #expect(app.current.session?.state == .awaitingToken, "the stored session, as a relaunch finds it")
        #expect(try sessions.load()?.config.timeout == 5, "the configuration was saved")

        app.login(user: .ada, token: AuthToken("again"))
        try app.save(to: sessions)
        let relaunched = makeStack()
        try relaunched.restore(from: sessions)
        #expect(relaunched.current.session?.token.secret == "again" && relaunched.current.config.timeout == 5)
    }

    /// The token index swapped for a link or a FIFO names nothing, and holds no secret: a load
    /// restores the accounts from their own files; a sign-out still deletes the signed-out
    /// account's token first (the snapshot's accounts stand in for the index) and writes the
    /// index anew; `clear()` still deletes every token. (Before, every save and `clear()`
    /// stopped at the index, and a logout left its token on disk.)
    @Test(arguments: ["a symbolic link", "a FIFO"])
    func aDamagedTokenIndexNamesNothingAndTheNextSaveWritesItAnew(damage: String) throws {
        let files = try AccountFiles()
        let stack = threeAccounts()
        try stack.save(to: files.sessions)
        let index = files.secrets.fileURL(forKey: files.sessions.tokenKey)
        try replace(index, with: damage, target: files.directory.file("elsewhere"))
        let relaunched = makeAccountsStack()
        try relaunched.restore(from: files.sessions)
        #expect(relaunched.current.accounts.map(\.user.id) == ["grace", "ada", "alan"], "every account from its own file")

        relaunched.logout(account: "alan")
        try relaunched.save(to: files.sessions)
        #expect(try !files.directory.anyFileContains("alan#2"), "the signed-out account's token is gone")
        #expect(try files.secretFiles() == ["habitat.session.token", "habitat.session.token.ada", "habitat.session.token.grace"])
        #expect(try FileManager.default.attributesOfItem(atPath: index.path)[.type] as? FileAttributeType == .typeRegular, "the index, written anew")
        let again = makeAccountsStack()
        try again.restore(from: files.sessions)
        #expect(again.current.accounts.map(\.user.id) == ["grace", "ada"])

        try replace(index, with: "a FIFO")
        try files.sessions.clear()
        #expect(try files.secretFiles().isEmpty, "clear() deleted every token the snapshot named")
    }

    @Test func aDanglingLockSymlinkCreatesNothingWhereItPoints() throws {
        let directory = try TemporaryDirectory()
        let store = try JSONFileStore(url: directory.file("store.json"))
        let target = directory.file("created-by-the-lock")
        try FileManager.default.createSymbolicLink(at: directory.file("store.json.lock"), withDestinationURL: target)
        #expect(throws: StoreError.notARegularFile(path: directory.file("store.json.lock").path, found: "a symbolic link")) {
            try store.setData(Data("1".utf8), forKey: "k")
        }
        #expect(!FileManager.default.fileExists(atPath: target.path))
    }

    @Test func aFIFOInPlaceOfTheDocumentOrTheTokenFailsAtOnce() throws {
        let directory = try TemporaryDirectory()
        let document = directory.file("store.json")
        let secrets = try FileSecretStore(directory: directory.file("secrets"))
        #expect(mkfifo(document.path, 0o600) == 0)
        #expect(mkfifo(secrets.fileURL(forKey: "token").path, 0o600) == 0)
        let store = try JSONFileStore(url: document)
        let outcome = try withTimeout(seconds: 10) {
            (Result { try store.keys() }, Result { try secrets.secret(forKey: "token") })
        }
        #expect(throws: StoreError.notARegularFile(path: document.path, found: "a FIFO")) { try outcome.0.get() }
        #expect(throws: StoreError.notARegularFile(path: secrets.fileURL(forKey: "token").path, found: "a FIFO")) {
            try outcome.1.get()
        }
    }

    @Test func aDeviceInPlaceOfTheDocumentIsRefused() throws {
        let directory = try TemporaryDirectory()
        let document = directory.file("store.json")
        try FileManager.default.createSymbolicLink(at: document, withDestinationURL: URL(fileURLWithPath: "/dev/zero"))
        let store = try JSONFileStore(url: document)
        let outcome = try withTimeout(seconds: 10) { Result { try store.keys() } }
        #expect(throws: StoreError.notARegularFile(path: document.path, found: "a symbolic link")) { try outcome.get() }
        #expect(throws: StoreError.self) { try store.setData(Data("1".utf8), forKey: "k") }
        #expect(FileManager.default.fileExists(atPath: "/dev/zero"), "nothing was renamed over the link's target")
    }

    @Test func aDocumentOverTheSizeLimitIsNeitherReadNorWritten() throws {
        let directory = try TemporaryDirectory()
        let store = try JSONFileStore(url: directory.file("store.json"), maximumFileSize: 200)
        try store.setData(Data("\"small\"".utf8), forKey: "a")
        let before = try Data(contentsOf: directory.file("store.json"))
        #expect(throws: StoreError.tooLarge(path: directory.file("store.json").path, size: 349, limit: 200)) {
            try store.setData(Data("\"\(String(repeating: "x", count: 250))\"".utf8), forKey: "b")
        }
        #expect(try Data(contentsOf: directory.file("store.json")) == before, "the document is the last good one")
        try Data(repeating: 0x20, count: 1_000).write(to: directory.file("store.json"))
        #expect(throws: StoreError.tooLarge(path: directory.file("store.json").path, size: 1_000, limit: 200)) {
            try store.keys()
        }
    }

    // MARK: Writes that a read would refuse

    @Test(arguments: [511, 600])
    func aValueNestedTooDeepIsRefusedAndTheStoreStaysReadable(depth: Int) throws {
        let directory = try TemporaryDirectory()
        let store = try JSONFileStore(url: directory.file("store.json"))
        try store.setData(Data("1".utf8), forKey: "other")
        let deep = Data((String(repeating: "[", count: depth) + String(repeating: "]", count: depth)).utf8)
        #expect(throws: StoreError.valueTooDeep(key: "deep", limit: 510)) { try store.setData(deep, forKey: "deep") }
        let reopened = try JSONFileStore(url: directory.file("store.json"))
        #expect(try reopened.keys() == ["other"], "every other key is still there")
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        #expect(!names.contains { $0.contains(".corrupt-") })
        // The deepest value a document holds is accepted and reads back.
        let deepest = Data((String(repeating: "[", count: 510) + String(repeating: "]", count: 510)).utf8)
        try store.setData(deepest, forKey: "deep")
        #expect(try reopened.data(forKey: "deep") == deepest)
    }

    // MARK: Stored values never reach a message

    @Test func decodingErrorsNameThePathNotTheValue() throws {
        let planted = "PLANTED-VALUE-7c1"
        let snapshot = #"{"version":1,"payload":{"config":{"timeout":30,"features":[]},"session":{"user":{"id":1,"name":"Ada"},"state":"\#(planted)"}}}"#
        let sessions = SessionStore<TestApp>(store: InMemoryStore(["habitat.session": Data(snapshot.utf8)]), secrets: InMemorySecretStore())
        #expect {
            try sessions.load()
        } throws: { error in
            let text = "\(error) \(String(reflecting: error)) \((error as? SnapshotError).map { "\($0)" } ?? "")"
            return !text.contains(planted) && text.contains("payload.session.state")
        }

        let store = InMemoryStore(["config": Data(#"{"timeout":"\#(planted)","features":[]}"#.utf8)])
        #expect {
            try store.value(for: StoreKey<TestConfig>("config"))
        } throws: { error in
            let text = "\(error) \(String(reflecting: error))"
            return !text.contains(planted) && text.contains("timeout")
        }
    }

    // MARK: What a crash leaves

    /// Under the writers' lock no writer is mid-write, so every temporary file is stale, whatever
    /// process id it names: a dead writer's, or one whose id a new process now has (a token
    /// copy once outlived logout that way).
    @Test func temporaryFilesAreRemovedOnOpenWhateverProcessTheyName() async throws {
        try await offThePool {
            let directory = try TemporaryDirectory()
            let dead = try deadProcessID()
            let live = Process()
            live.executableURL = URL(fileURLWithPath: "/bin/sleep")
            live.arguments = ["30"]
            try live.run()
            defer {
                // NB: SIGKILL and a wait: under `swift test` the child outlived `terminate()` and kept
                // the run from ending for 30 seconds.
                _ = kill(live.processIdentifier, SIGKILL)
                live.waitUntilExit()
            }
            let secretsDirectory = directory.file("secrets")
            try FileManager.default.createDirectory(at: secretsDirectory, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
            let stale = [
                directory.file(".store.json.tmp-\(dead)-1"), secretsDirectory.appendingPathComponent(".token.tmp-\(dead)-2"),
                directory.file(".store.json.tmp-\(live.processIdentifier)-3"),
                secretsDirectory.appendingPathComponent(".token.tmp-\(live.processIdentifier)-4"),
            ]
            let others = [directory.file(".other.json.tmp-\(dead)-5")]   // another file's: its own store's lock covers it
            for file in stale + others { try Data("token-stale".utf8).write(to: file) }

            _ = try JSONFileStore(url: directory.file("store.json"))
            _ = try FileSecretStore(directory: secretsDirectory)
            for file in stale { #expect(!FileManager.default.fileExists(atPath: file.path), "\(file.lastPathComponent) removed") }
            for file in others { #expect(FileManager.default.fileExists(atPath: file.path), "\(file.lastPathComponent) left to its store") }
        }
    }

    @Test func logoutRemovesEveryFileOfTheToken() throws {
        let directory = try TemporaryDirectory()
        let secrets = try FileSecretStore(directory: directory.file("secrets"))
        let sessions = SessionStore<TestApp>(store: try JSONFileStore(url: directory.file("session.json")), secrets: secrets)
        try sessions.save(makeEnvironment().with(\.session, UserSession(user: .ada, token: AuthToken("token-ada"))))
        // What a writer killed mid-save leaves: a temporary copy of the token.
        let stray = directory.file("secrets/.habitat.session.token.tmp-\(try deadProcessID())-9")
        try Data("token-ada".utf8).write(to: stray)
        try sessions.save(makeEnvironment())
        #expect(try !directory.anyFileContains("token-ada"))
    }

    @Test func aCrashBetweenTheTokenAndTheSnapshotKeepsTheOldPair() throws {
        let secrets = InMemorySecretStore()
        let plain = InMemoryStore()
        let sessions = SessionStore<TestApp>(store: plain, secrets: secrets)
        try sessions.save(makeEnvironment().with(\.session, UserSession(user: .ada, token: AuthToken("token-ada"))))
        // Switching to Grace dies after the token was written, before the snapshot.
        let dying = SessionStore<TestApp>(store: FailingStore(), secrets: secrets)
        #expect(throws: SnapshotError.self) {
            try dying.save(makeEnvironment().with(\.session, UserSession(user: .grace, token: AuthToken("token-grace"))))
        }
        let restored = try #require(try sessions.load()?.session)
        #expect(restored.user == .ada)
        #expect(restored.token.secret == "token-ada", "Ada's data goes with Ada's token")
        // The switch completes on the next save: Grace with Grace's token, Ada's token gone.
        try sessions.save(makeEnvironment().with(\.session, UserSession(user: .grace, token: AuthToken("token-grace"))))
        let switched = try #require(try sessions.load()?.session)
        #expect(switched.user == .grace && switched.token.secret == "token-grace")
        #expect(try secrets.secret(forKey: sessions.tokenKey(forAccount: "")).map { String(decoding: $0, as: UTF8.self).contains("token-ada") } == false)
    }

    @Test func aSnapshotWhoseTokenIsFromAnotherSaveLoadsLoggedOut() throws {
        let secrets = InMemorySecretStore()
        let adaSnapshot = InMemoryStore()
        try SessionStore<TestApp>(store: adaSnapshot, secrets: secrets)
            .save(makeEnvironment().with(\.session, UserSession(user: .ada, token: AuthToken("token-ada"))))
        // Another save's token (and nothing of Ada's) in the secret store.
        try SessionStore<TestApp>(store: InMemoryStore(), secrets: secrets)
            .save(makeEnvironment().with(\.session, UserSession(user: .grace, token: AuthToken("token-grace"))))
        let snapshot = try #require(try SessionStore<TestApp>(store: adaSnapshot, secrets: secrets).load())
        #expect(snapshot.session == nil, "Ada's snapshot is never paired with Grace's token")
    }

    @Test func aSnapshotFromBeforePairingStillRestoresWithItsPlainToken() throws {
        let legacy = #"{"version":1,"payload":{"config":{"timeout":30,"features":[]},"session":{"user":{"id":1,"name":"Ada"},"state":"authenticated"}}}"#
        let secrets = InMemorySecretStore()
        try secrets.setSecret(Data("legacy-token".utf8), forKey: "habitat.session.token")
        let sessions = SessionStore<TestApp>(store: InMemoryStore(["habitat.session": Data(legacy.utf8)]), secrets: secrets)
        let session = try #require(try sessions.load()?.session)
        #expect(session.user == .ada && session.token.secret == "legacy-token")
    }
}

/// A plain store whose every operation fails, as a process that died before writing would.
struct FailingStore: KeyValueStore {
    func data(forKey key: String) throws(StoreError) -> Data? { throw .unreadable(path: "dead store", reason: "died") }
    func write(_ changes: [String: Data?]) throws(StoreError) { throw .unreadable(path: "dead store", reason: "died") }
    func keys() throws(StoreError) -> [String] { throw .unreadable(path: "dead store", reason: "died") }
}

/// The id of a process that has exited and been reaped.
func deadProcessID() throws -> Int32 {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/bin/true")
    try process.run()
    process.waitUntilExit()
    return process.processIdentifier
}

struct TimedOut: Error {}

/// Runs `body` on a thread of its own and waits at most `seconds` for it: a call that would
/// hang (an `open` of a FIFO) fails the test instead of stalling the suite.
func withTimeout<R: Sendable>(seconds: Int, _ body: @escaping @Sendable () -> R) throws -> R {
    let done = DispatchSemaphore(value: 0)
    let box = ResultBox<R>()
    Thread.detachNewThread {
        box.set(body())
        done.signal()
    }
    guard done.wait(timeout: .now() + .seconds(seconds)) == .success, let result = box.get() else {
        Issue.record("the call did not return within \(seconds) s")
        throw TimedOut()
    }
    return result
}

final class ResultBox<R: Sendable>: Sendable {
    private let value = LockedBox<R?>(nil)
    func set(_ newValue: R) { value.withLock { $0 = newValue } }
    func get() -> R? { value.withLock { $0 } }
}

@Suite struct DirectoryCreationTests {
    @Test func aDirectoryThatCantBeCreatedNamesItAndTheSystemsReason() throws {
        let directory = try TemporaryDirectory()
        let locked = directory.file("locked")
        try FileManager.default.createDirectory(at: locked, withIntermediateDirectories: false)
        chmod(locked.path, 0o500)
        defer { chmod(locked.path, 0o700) }
        let target = locked.appendingPathComponent("a/b")
        if geteuid() == 0 {
            // root may write anywhere: the parents are made, owner-only.
            _ = try FileSecretStore(directory: target)
            var status = stat()
            #expect(lstat(locked.appendingPathComponent("a").path, &status) == 0)
            #expect(status.st_mode & 0o777 == 0o700)
        } else {
            #expect(throws: StoreError.unwritable(
                path: target.path, reason: "cannot create the directory \(locked.appendingPathComponent("a").path): Permission denied"
            )) { try FileSecretStore(directory: target) }
        }
    }
}

@Suite struct JSONFileStoreURLTests {
    /// A newcomer's mistake: the store's URL names the directory, not the file in it. Refused at
    /// once, naming the path, rather than at the first restore.
    @Test func aDirectoryIsRefusedAtInit() throws {
        let directory = try TemporaryDirectory()
        #expect(throws: StoreError.notARegularFile(path: directory.url.standardizedFileURL.path, found: "a directory")) {
            try JSONFileStore(url: directory.url)
        }
        let file = try JSONFileStore(url: directory.file("session.json"))
        try file.write(["k": Data("1".utf8)])
        #expect(try JSONFileStore(url: directory.file("session.json")).data(forKey: "k") == Data("1".utf8), "a file is fine")
    }
}
