// A child process for the session tests: a second app (or an app extension) that shares a
// session store with the test, or one that a test kills mid-refresh or mid-migration.
//
// Like the store worker, it is this test bundle run again with only the `sessionWorker`
// fixture selected, and the work named in HABITAT_SESSION_WORKER (lines):
//
//     refresh-together DIR LOG START   restore DIR's session, print "ready"; once the file START
//                                      exists, refresh it (the refresh appends "refreshed by PID
//                                      sending TOKEN" to LOG and takes 300 ms); print the token it
//                                      ends with
//     extension-wait DIR LOG START     an app extension on DIR's session that never refreshes:
//                                      print "ready"; once START exists, ask for a refresh until the app's
//                                      rotated token arrives (a refresh it made itself would
//                                      append to LOG); print the token it ends with
//     refresh-loop DIR FIRST LOG       restore, then refresh forever, each refresh appending
//                                      "sent TOKEN" to LOG (the server) and the n-th getting
//                                      "token-(FIRST + n)"; print "refreshed N" once it is saved,
//                                      or "ended OUTCOME" and exit when the session ended
//     logout DIR                       restore DIR's session and log out, saving before exit;
//                                      print "logged out"
//     sign-in-out-loop DIR FIRST       sign user FIRST in, save, log out, save, then FIRST + 1...
//                                      forever, printing "in N" / "out N" after each save
//     follow-print DIR                 restore DIR's session, follow the store (its change feed)
//                                      and print "user NAME" (or "user none") after each change,
//                                      "ready" first
//     config-loop DIR                  restore once, then change the configuration and save,
//                                      forever: a second process that never signs in or out
//     accounts-loop DIR FIRST          several accounts on DIR's session: restore, then forever
//                                      sign a new account in (u FIRST, u FIRST+1...), switch to
//                                      another, or sign one out, saving after each; print
//                                      "try STATE" before each save and "ack STATE" after it
//                                      (with " out NAME" when an account was signed out)
//     accounts-switch-loop DIR NAMES   restore DIR's accounts and switch between them forever,
//                                      saving after each switch: a second process
//     accounts-refresh-loop DIR NAME FIRST  restore DIR's accounts and refresh account NAME
//                                      forever, the n-th refresh getting "NAME#(FIRST + n)";
//                                      print "refreshed N" once it is saved
//     accounts-refresh-together DIR LOG START  restore DIR's accounts, print "ready"; once START
//                                      exists, refresh account "ada" (not the active one): the
//                                      refresh appends "refreshed by PID sending TOKEN" to LOG and
//                                      takes 300 ms; print ada's token
//     accounts-refresh-one DIR LOG START NAME  restore DIR's accounts, print "ready"; once START exists,
//                                      refresh account NAME, logging "start NAME" and, 300 ms
//                                      later, "end NAME" to LOG
//     migrate DIR LEGACY KILL-AT       migrate the token under "accessToken" in the JSON file
//                                      LEGACY into DIR's store, killing itself with SIGKILL
//                                      just before its KILL-AT-th write (0: never)

import Foundation
import Habitat
import HabitatPersistence
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A session worker: `fixtureProcess("sessionWorker", …)` with its arguments.
func sessionWorker(_ arguments: String...) -> Process {
    fixtureProcess("sessionWorker", environment: ["HABITAT_SESSION_WORKER": arguments.joined(separator: "\n")])
}

/// The session store the workers and the tests share in `directory` (an app group's container,
/// on Apple platforms; the secrets directory stands in for a shared keychain access group).
func sharedSessions(in directory: URL, refreshesTokens: Bool = true) throws -> SessionStore<TestApp> {
    SessionStore(
        store: try JSONFileStore(url: directory.appendingPathComponent("session.json")),
        secrets: try FileSecretStore(directory: directory.appendingPathComponent("secrets")),
        refreshesTokens: refreshesTokens
    )
}

/// The several-accounts session store the workers and the tests share in `directory`.
func accountSessions(in directory: URL) throws -> SessionStore<AccountsApp> {
    SessionStore(
        store: try JSONFileStore(url: directory.appendingPathComponent("session.json")),
        secrets: try FileSecretStore(directory: directory.appendingPathComponent("secrets"))
    )
}

/// The accounts of `environment` as one line: "active=NAME others=NAME,NAME".
func describeAccounts(_ environment: HabitatEnvironment<AccountsApp>) -> String {
    "active=\(environment.activeAccountID ?? "-") others=\(environment.otherAccounts.map(\.user.id).joined(separator: ","))"
}

@Suite struct SessionWorkerFixture {
    /// Not a test of its own: the body of a session worker, when a test runs one.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["HABITAT_SESSION_WORKER"] != nil))
    func sessionWorker() async throws {
        let arguments = ProcessInfo.processInfo.environment["HABITAT_SESSION_WORKER", default: ""]
            .split(separator: "\n").map(String.init)
        switch (arguments.first, arguments.count) {
        case ("refresh-together", 4):
            let stack = makeStack()
            let sessions = try sharedSessions(in: URL(fileURLWithPath: arguments[1]))
            try #require(stack.restoreAtLaunch(from: sessions).snapshot?.session != nil)
            stack.enableAutosave(to: sessions)
            FileHandle.standardOutput.write(Data("ready\n".utf8))
            while !FileManager.default.fileExists(atPath: arguments[3]) { try await Task.sleep(for: .milliseconds(2)) }
            let log = arguments[2]
            _ = try await stack.refreshSession { session in
                try appendLine("refreshed by \(getpid()) sending \(session.token.secret)", to: log)
                try await Task.sleep(for: .milliseconds(300))
                return .refreshed(token: AuthToken("rotated-by-\(getpid())"))
            }
            await stack.flushAutosave()
            print(stack.current.session?.token.secret ?? "none")
        case ("extension-wait", 4):
            let stack = makeStack()
            let sessions = try sharedSessions(in: URL(fileURLWithPath: arguments[1]), refreshesTokens: false)
            try #require(stack.restoreAtLaunch(from: sessions).snapshot?.session != nil)
            stack.enableAutosave(to: sessions)
            FileHandle.standardOutput.write(Data("ready\n".utf8))
            while !FileManager.default.fileExists(atPath: arguments[3]) { try await Task.sleep(for: .milliseconds(2)) }
            let log = arguments[2]
            for _ in 0..<5_000 {
                let outcome = await stack.refreshSession { _ in
                    try? appendLine("refreshed by the extension \(getpid())", to: log)
                    return .refreshed(token: AuthToken("rotated-by-the-extension"))
                }
                if outcome == .refreshed { break }
                try #require(outcome == .waitingForRotation)
                try await Task.sleep(for: .milliseconds(2))
            }
            print(stack.current.session?.token.secret ?? "none")
        case ("refresh-loop", 4):
            let first = try #require(Int(arguments[2]))
            let log = arguments[3]
            let stack = makeStack()
            let sessions = try sharedSessions(in: URL(fileURLWithPath: arguments[1]))
            try #require(stack.restoreAtLaunch(from: sessions).snapshot?.session != nil)
            stack.enableAutosave(to: sessions)
            for n in first... {
                let outcome = await stack.refreshSession { session in
                    // The server receives the refresh token here, and rotates it.
                    try? appendLine("sent \(session.token.secret)", to: log)
                    usleep(UInt32.random(in: 0..<2_000))
                    return .refreshed(token: AuthToken("token-\(n)"))
                }
                guard outcome == .refreshed else {
                    FileHandle.standardOutput.write(Data("ended \(outcome)\n".utf8))
                    exit(0)
                }
                FileHandle.standardOutput.write(Data("refreshed \(n)\n".utf8))
            }
        case ("follow-print", 2):
            let stack = makeStack()
            let sessions = try sharedSessions(in: URL(fileURLWithPath: arguments[1]))
            try stack.restore(from: sessions)
            let changes = stack.changes
            let following = stack.followStore(sessions)
            defer { following.stop() }
            FileHandle.standardOutput.write(Data("ready \(following.usesChangeFeed ? "feed" : "polling")\n".utf8))
            for await change in changes {
                FileHandle.standardOutput.write(Data("user \(change.new.currentUser?.name ?? "none")\n".utf8))
            }
        case ("logout", 2):
            let stack = makeStack()
            let sessions = try sharedSessions(in: URL(fileURLWithPath: arguments[1]))
            try #require(stack.restoreAtLaunch(from: sessions).snapshot?.session != nil)
            try stack.logout(savingTo: sessions)
            print("logged out")
        case ("sign-in-out-loop", 3):
            let first = try #require(Int(arguments[2]))
            let stack = makeStack()
            let sessions = try sharedSessions(in: URL(fileURLWithPath: arguments[1]))
            stack.restoreAtLaunch(from: sessions)
            for n in first... {
                stack.login(user: TestUser(id: n, name: "user \(n)"), token: AuthToken("token-\(n)"))
                try stack.save(to: sessions)
                FileHandle.standardOutput.write(Data("in \(n)\n".utf8))
                try stack.logout(savingTo: sessions)
                FileHandle.standardOutput.write(Data("out \(n)\n".utf8))
            }
        case ("config-loop", 2):
            let stack = makeStack()
            let sessions = try sharedSessions(in: URL(fileURLWithPath: arguments[1]))
            stack.restoreAtLaunch(from: sessions)
            FileHandle.standardOutput.write(Data("ready\n".utf8))
            while true {
                stack.updateConfig { $0.timeout += 1 }
                try stack.save(to: sessions)
            }
        case ("accounts-loop", 3):
            var serial = try #require(Int(arguments[2]))
            let stack = makeAccountsStack()
            let sessions = try accountSessions(in: URL(fileURLWithPath: arguments[1]))
            try stack.restore(from: sessions)
            var random = SplitMix(seed: UInt64(serial))
            while true {
                let names = stack.current.accounts.map(\.user.id)
                var out = ""
                switch (names.count, random.next() % 3) {
                case (0..<2, _), (_, 0):
                    let member = Member(id: "u\(serial)", name: "User \(serial)")
                    stack.addAccount(user: member, token: memberToken(member, serial))
                    serial += 1
                case (_, 1):
                    try stack.switchAccount(to: names.randomElement(using: &random)!)
                default:
                    out = " out " + names.randomElement(using: &random)!
                    stack.logout(account: String(out.dropFirst(5)))
                }
                FileHandle.standardOutput.write(Data("try \(describeAccounts(stack.current))\n".utf8))
                try stack.save(to: sessions)
                FileHandle.standardOutput.write(Data("ack \(describeAccounts(stack.current))\(out)\n".utf8))
            }
        case ("accounts-refresh-together", 4):
            let stack = makeAccountsStack()
            let sessions = try accountSessions(in: URL(fileURLWithPath: arguments[1]))
            try stack.restore(from: sessions)
            stack.enableAutosave(to: sessions)
            FileHandle.standardOutput.write(Data("ready\n".utf8))
            while !FileManager.default.fileExists(atPath: arguments[3]) { try await Task.sleep(for: .milliseconds(2)) }
            let log = arguments[2]
            _ = try await stack.refreshSession(account: "ada") { session in
                try appendLine("refreshed by \(getpid()) sending \(session.token.secret)", to: log)
                try await Task.sleep(for: .milliseconds(300))
                return .refreshed(token: AuthToken("ada#\(getpid())"))
            }
            await stack.flushAutosave()
            print(stack.current.accounts.first { $0.user.id == "ada" }?.token.secret ?? "none")
        case ("accounts-refresh-one", 5):
            let stack = makeAccountsStack()
            let sessions = try accountSessions(in: URL(fileURLWithPath: arguments[1]))
            try stack.restore(from: sessions)
            stack.enableAutosave(to: sessions)
            FileHandle.standardOutput.write(Data("ready\n".utf8))
            while !FileManager.default.fileExists(atPath: arguments[3]) { try await Task.sleep(for: .milliseconds(2)) }
            let (log, name) = (arguments[2], arguments[4])
            _ = try await stack.refreshSession(account: name) { _ in
                try appendLine("start \(name)", to: log)
                try await Task.sleep(for: .milliseconds(300))
                try appendLine("end \(name)", to: log)
                return .refreshed(token: AuthToken("\(name)#\(getpid())"))
            }
            await stack.flushAutosave()
        case ("accounts-switch-loop", 2):
            let stack = makeAccountsStack()
            let sessions = try accountSessions(in: URL(fileURLWithPath: arguments[1]))
            try stack.restore(from: sessions)
            stack.enableAutosave(to: sessions)
            let following = stack.followStore(sessions, checkingEvery: .milliseconds(20))
            defer { following.stop() }
            FileHandle.standardOutput.write(Data("ready\n".utf8))
            while true {
                if let next = stack.current.otherAccounts.first { try? stack.switchAccount(to: next.user.id) }
                await stack.flushAutosave()
                try await Task.sleep(for: .milliseconds(5))
            }
        case ("accounts-refresh-loop", 4):
            let name = arguments[2]
            let first = try #require(Int(arguments[3]))
            let stack = makeAccountsStack()
            let sessions = try accountSessions(in: URL(fileURLWithPath: arguments[1]))
            try stack.restore(from: sessions)
            stack.enableAutosave(to: sessions)
            for n in first... {
                let outcome = await stack.refreshSession(account: name) { _ in
                    usleep(UInt32.random(in: 0..<2_000))
                    return .refreshed(token: AuthToken("\(name)#\(n)"))
                }
                await stack.flushAutosave()
                FileHandle.standardOutput.write(Data("\(outcome == .refreshed ? "refreshed" : "\(outcome)") \(n)\n".utf8))
            }
        case ("migrate", 4):
            let killAt = try #require(Int(arguments[3]))
            let writes = KillSwitch(at: killAt)
            let directory = URL(fileURLWithPath: arguments[1])
            let sessions = SessionStore<TestApp>(
                store: KillingStore(try JSONFileStore(url: directory.appendingPathComponent("session.json")), writes),
                secrets: KillingSecretStore(try FileSecretStore(directory: directory.appendingPathComponent("secrets")), writes),
                lockFile: directory.appendingPathComponent("session.json.session-lock")
            )
            let legacy = KillingStore(try JSONFileStore(url: URL(fileURLWithPath: arguments[2])), writes)
            let result = try makeStack().migrateLegacyToken(from: legacy, key: "accessToken", to: sessions) { .ada }
            print(result)
        default:
            Issue.record("unknown session worker command: \(arguments)")
        }
    }
}

/// Runs one session worker per command in `commands` on `directory`'s session, all refreshing
/// once the start file appears, and returns the token each printed and the refreshes made (the
/// lines of the shared refresh log). Expects every worker to exit 0.
func refreshTogether(in directory: TemporaryDirectory, _ commands: [String]) throws -> (tokens: [String], refreshes: [Substring]) {
    let log = directory.file("refreshes.log")
    _ = FileManager.default.createFile(atPath: log.path, contents: nil)
    let start = directory.file("start")
    let workers = commands.map { sessionWorker($0, directory.path, log.path, start.path) }
    let outputs = workers.map { _ in Pipe() }
    for (worker, output) in zip(workers, outputs) {
        worker.standardOutput = output
        try worker.run()
    }
    // NB: all have restored and wait for the start. A fixed pause was too short under the thread
    // sanitizer on a busy machine: a worker that restored after the other's refresh was saved
    // restored the new token and refreshed that one (no token sent twice, but two requests).
    for output in outputs { _ = output.fileHandleForReading.readData(ofLength: 6) }
    _ = FileManager.default.createFile(atPath: start.path, contents: nil)
    let tokens = outputs.map {
        String(decoding: $0.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }
    for worker in workers { worker.waitUntilExit() }
    #expect(workers.allSatisfy { $0.terminationStatus == 0 })
    let refreshes = try String(contentsOf: log, encoding: .utf8).split(separator: "\n")
    // The promise, whatever the timing: a refresh token reaches the server at most once.
    let sent = refreshes.compactMap { $0.split(separator: " sending ").dropFirst().first }
    #expect(Set(sent).count == sent.count, "a refresh token sent twice: \(refreshes)")
    return (tokens, refreshes)
}

/// Appends `line` to the file at `path` with O_APPEND, so two processes' lines never overwrite
/// each other.
private func appendLine(_ line: String, to path: String) throws {
    let fd = open(path, O_WRONLY | O_APPEND)
    guard fd >= 0 else { throw CocoaError(.fileWriteUnknown) }
    defer { close(fd) }
    let bytes = Array((line + "\n").utf8)
    guard write(fd, bytes, bytes.count) == bytes.count else { throw CocoaError(.fileWriteUnknown) }
}

/// Counts the writes made through the stores it is given to, and kills the process with
/// SIGKILL just before the `at`-th.
final class KillSwitch: @unchecked Sendable {
    // Safe: `count` is only touched with `lock` held.
    private let lock = NSLock()
    private var count = 0
    private let at: Int

    init(at: Int) { self.at = at }

    func beforeWrite() {
        let reached = lock.withLock {
            count += 1
            return count == at
        }
        if reached { kill(getpid(), SIGKILL) }
    }
}

struct KillingStore: KeyValueStore {
    let base: any KeyValueStore
    let writes: KillSwitch
    init(_ base: any KeyValueStore, _ writes: KillSwitch) {
        self.base = base
        self.writes = writes
    }
    func data(forKey key: String) throws(StoreError) -> Data? { try base.data(forKey: key) }
    func keys() throws(StoreError) -> [String] { try base.keys() }
    func write(_ changes: [String: Data?]) throws(StoreError) {
        writes.beforeWrite()
        try base.write(changes)
    }
}

struct KillingSecretStore: SecretStore {
    let base: any SecretStore
    let writes: KillSwitch
    init(_ base: any SecretStore, _ writes: KillSwitch) {
        self.base = base
        self.writes = writes
    }
    func secret(forKey key: String) throws(StoreError) -> Data? { try base.secret(forKey: key) }
    func setSecret(_ secret: Data?, forKey key: String) throws(StoreError) {
        writes.beforeWrite()
        try base.setSecret(secret, forKey: key)
    }
}
