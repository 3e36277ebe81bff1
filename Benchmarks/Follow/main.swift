// How fast another process's sign-out reaches a following stack, and how often an idle
// follower wakes, with the store's change feed and with polling, in one run:
//
//     swift run -c release habitat-follow [--smoke]
//
// A child process (this program, `child DIR`) signs in and out on a session store in DIR; the
// parent's stack follows the same store and times each change from the child's save returning
// to the change on the parent's stream (CLOCK_MONOTONIC in both processes). Polling is the
// same store behind a wrapper that offers no change feed, checked every 250 ms (the default).
// Idle wake-ups are the follower's checks of the store (`StoreFollower.checks`) while nothing
// changes, per minute. (Context switches from /proc were tried first: the thread pool's own
// housekeeping after the trials moved them by thousands a minute, more than what is measured.)

import Foundation
import Habitat
import HabitatPersistence
#if canImport(Glibc)
import Glibc
#endif

struct Member: Codable, Sendable, Identifiable {
    var id: Int
}

enum FollowApp: EnvironmentSchema {
    typealias Services = Int
    typealias User = Member
}

func nanoseconds() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
}

func sessions(in directory: URL, feed: Bool) throws -> SessionStore<FollowApp> {
    let file = try JSONFileStore(url: directory.appendingPathComponent("session.json"))
    return SessionStore(
        store: feed ? file : NoFeed(base: file),
        secrets: try FileSecretStore(directory: directory.appendingPathComponent("secrets"))
    )
}

/// The same store, without a change feed: its followers poll.
struct NoFeed: KeyValueStore {
    let base: JSONFileStore
    func data(forKey key: String) throws(StoreError) -> Data? { try base.data(forKey: key) }
    func write(_ changes: [String: Data?]) throws(StoreError) { try base.write(changes) }
    func keys() throws(StoreError) -> [String] { try base.keys() }
}

/// The child: signs in ("login N") or out ("logout") for each line read, then prints the
/// moment its save returned.
func child(_ directory: String) throws {
    let store = try sessions(in: URL(fileURLWithPath: directory), feed: true)
    let stack = EnvironmentStack<FollowApp>(HabitatEnvironment(services: 0))
    while let line = readLine() {
        if line.hasPrefix("login ") {
            stack.login(user: Member(id: Int(line.dropFirst(6)) ?? 0), token: AuthToken("t-\(line)"))
            try stack.save(to: store)
        } else {
            try stack.logout(savingTo: store)
        }
        FileHandle.standardOutput.write(Data("saved \(nanoseconds())\n".utf8))
    }
}

/// One line from `handle`, read a byte at a time (the child writes one short line per save).
func readLine(from handle: FileHandle) -> String? {
    var bytes: [UInt8] = []
    var byte: UInt8 = 0
    while read(handle.fileDescriptor, &byte, 1) == 1 {
        if byte == UInt8(ascii: "\n") { return String(decoding: bytes, as: UTF8.self) }
        bytes.append(byte)
    }
    return nil
}

func percentile(_ values: [Double], _ p: Double) -> Double {
    let sorted = values.sorted()
    return sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)]
}

func run(trials: Int, idle: Double) async throws {
    print("| follower | sign-out reaches the stream: p50 | p99 | max | idle wake-ups / minute |")
    print("|---|---:|---:|---:|---:|")
    for feed in [true, false] {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("habitat-follow-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(at: directory) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
        process.arguments = ["child", directory.path]
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        let reply = output.fileHandleForReading

        let follower = EnvironmentStack<FollowApp>(HabitatEnvironment(services: 0))
        let store = try sessions(in: directory, feed: feed)
        let following = follower.followStore(store)
        guard following.usesChangeFeed == feed else { fatalError("the follower's mode is not the one measured") }
        var changes = follower.changes.makeAsyncIterator()
        var latencies: [Double] = []
        for trial in 0..<(2 * trials) {
            // NB: at a random moment, so a poll's phase is random too, as for a user's sign-out.
            try await Task.sleep(for: .milliseconds(Int.random(in: 0..<250)))
            input.fileHandleForWriting.write(Data((trial.isMultiple(of: 2) ? "login \(trial)\n" : "logout\n").utf8))
            guard let line = readLine(from: reply), let saved = UInt64(line.split(separator: " ")[1]) else { fatalError("child ended") }
            guard let change = await changes.next() else { fatalError("stream ended") }
            let seen = nanoseconds()
            guard change.kind == .storeChanged else { fatalError("unexpected change \(change.kind)") }
            // Sign-outs are the row; sign-ins keep the store changing between them.
            if !trial.isMultiple(of: 2) { latencies.append(Double(seen - saved) / 1e6) }
        }
        // Idle: how often the follower checks the store while nothing changes.
        try await Task.sleep(for: .seconds(1))
        let before = following.checks
        try await Task.sleep(for: .seconds(idle))
        let wakeUps = Double(following.checks - before) * 60 / idle
        following.stop()
        input.fileHandleForWriting.closeFile()
        process.waitUntilExit()
        print(String(
            format: "| %@ | %.1f ms | %.1f ms | %.1f ms | %.0f |",
            feed ? "change feed (inotify)" : "polling every 250 ms",
            percentile(latencies, 0.5), percentile(latencies, 0.99), latencies.max() ?? 0, wakeUps
        ))
    }
    print("(\(trials) sign-outs each; idle wake-ups: the follower's checks of the store over \(Int(idle)) s with nothing changing, per minute)")
}

let arguments = CommandLine.arguments
if arguments.count == 3, arguments[1] == "child" {
    try child(arguments[2])
} else {
    let smoke = arguments.contains("--smoke")
    try await run(trials: smoke ? 20 : 200, idle: smoke ? 2 : 20)
}
