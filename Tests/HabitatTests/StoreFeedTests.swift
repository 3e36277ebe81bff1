import Foundation
@testable import Habitat
@testable import HabitatPersistence
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Counts the calls of a change feed, and waits for them.
final class FeedCalls: Sendable {
    private let count = LockedBox(0)

    func record() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }

    /// Waits until the feed was called more than `before` times, for at most two seconds.
    func waitBeyond(_ before: Int) async -> Bool {
        for _ in 0..<2_000 where value <= before {
            try? await Task.sleep(for: .milliseconds(1))
        }
        return value > before
    }
}

/// The stores' change feeds: a file store's comes from the kernel and survives whatever happens
/// to the file; followers use it, wake nobody while idle, and fall back to polling when the
/// kernel refuses a watch.
@Suite(.timeLimit(.minutes(1))) struct StoreFeedTests {
    @Test func aFileStoresFeedSeesAnotherInstancesAtomicWrites() async throws {
        let directory = try TemporaryDirectory()
        let url = directory.file("store.json")
        let watched = try JSONFileStore(url: url)
        let calls = FeedCalls()
        let observation = try #require(watched.observeChanges { calls.record() })
        let writer = try JSONFileStore(url: url)
        for round in 1...3 {
            let before = calls.value
            try writer.setData(Data("\(round)".utf8), forKey: "k")
            #expect(await calls.waitBeyond(before), "round \(round): the atomic replacement was seen")
        }
        observation.stop()
        try await Task.sleep(for: .milliseconds(50))
        let stopped = calls.value
        try writer.setData(Data("after".utf8), forKey: "k")
        try await Task.sleep(for: .milliseconds(200))
        #expect(calls.value == stopped, "a stopped feed calls nobody")
    }

    @Test func theFeedGoesOnThroughDeletionAndRecreationAndARenamedDirectory() async throws {
        let parent = try TemporaryDirectory()
        let original = parent.file("store")
        let url = original.appendingPathComponent("store.json")
        let watched = try JSONFileStore(url: url)
        try watched.setData(Data("1".utf8), forKey: "k")
        let calls = FeedCalls()
        let observation = try #require(watched.observeChanges { calls.record() })
        defer { observation.stop() }

        var before = calls.value
        #expect(unlink(url.path) == 0)
        #expect(await calls.waitBeyond(before), "the file's deletion")
        before = calls.value
        try watched.setData(Data("2".utf8), forKey: "k")
        #expect(await calls.waitBeyond(before), "its re-creation")

        let moved = parent.file("moved")
        #expect(rename(original.path, moved.path) == 0)
        try await Task.sleep(for: .milliseconds(50))
        before = calls.value
        // The store writes through the directory it opened: the renamed one, still watched.
        try watched.setData(Data("3".utf8), forKey: "k")
        #expect(await calls.waitBeyond(before), "a write after the directory was renamed")
        #expect(try JSONFileStore(url: moved.appendingPathComponent("store.json")).data(forKey: "k") == Data("3".utf8))
    }

    @Test func otherFilesInTheDirectoryDontWakeTheFeed() async throws {
        let directory = try TemporaryDirectory()
        let watched = try JSONFileStore(url: directory.file("store.json"))
        let neighbour = try JSONFileStore(url: directory.file("other.json"))
        let calls = FeedCalls()
        let observation = try #require(watched.observeChanges { calls.record() })
        defer { observation.stop() }
        try neighbour.setData(Data("x".utf8), forKey: "k")
        try await Task.sleep(for: .milliseconds(200))
        #expect(calls.value == 0)
    }

    @Test func anInMemoryStoreCallsBackAfterItsWritesAndAScopedStoreForwardsItsBase() async throws {
        let store = InMemoryStore()
        let calls = FeedCalls()
        let observation = try #require(store.scoped(to: "user").observeChanges { calls.record() })
        try store.setData(Data("1".utf8), forKey: "k")
        #expect(await calls.waitBeyond(0))
        observation.stop()
        #expect(MockFreeStore().observeChanges { calls.record() } == nil, "a store that can't tell offers no feed")
    }

    @Test func fiftyFollowersOnOneStoreAllSeeALogoutWithoutPolling() async throws {
        let directory = try TemporaryDirectory()
        let sessions = try sharedSessions(in: directory.url)
        let app = makeStack()
        app.login(user: .ada, token: AuthToken("t1"))
        try app.save(to: sessions)

        let followers = try (0..<50).map { _ in
            let stack = makeStack()
            try stack.restore(from: try sharedSessions(in: directory.url))
            return (stack, stack.followStore(try sharedSessions(in: directory.url), checkingEvery: .seconds(3_600)))
        }
        #expect(followers.allSatisfy { $0.1.usesChangeFeed })
        #expect(followers.allSatisfy { $0.0.current.currentUser == .ada })

        try app.logout(savingTo: sessions)
        for _ in 0..<2_000 where !followers.allSatisfy({ $0.0.current.session == nil }) {
            try await Task.sleep(for: .milliseconds(1))
        }
        #expect(followers.allSatisfy { $0.0.current.session == nil }, "every follower saw the logout")
        for (_, follower) in followers { follower.stop() }
    }

    @Test func anIdleFollowerWakesNobodyAndAPollingOneWakesEveryInterval() async throws {
        let directory = try TemporaryDirectory()
        let sessions = try sharedSessions(in: directory.url)
        let fed = makeStack().followStore(sessions, checkingEvery: .milliseconds(20))
        let polling = makeStack().followStore(SessionStore(store: MockFreeStore(), secrets: InMemorySecretStore()), checkingEvery: .milliseconds(20))
        try await Task.sleep(for: .milliseconds(500))
        #expect(fed.usesChangeFeed && !polling.usesChangeFeed)
        #expect(fed.checks <= 1, "the feed's one check at start, then nothing: \(fed.checks)")
        #expect(polling.checks >= 10, "polling checks every 20 ms: \(polling.checks)")
        fed.stop()
        polling.stop()
    }

    /// A polling interval out of range is bounded, not trusted: zero or negative checks every
    /// millisecond (it spun the queue), and one past `Int`'s nanoseconds waits a year (it trapped).
    @Test(arguments: [Duration.zero, .milliseconds(-5), .seconds(Int64.max)])
    func aPollingIntervalOutOfRangeIsBounded(interval: Duration) async throws {
        let started = ContinuousClock.now
        let follower = makeStack().followStore(SessionStore(store: MockFreeStore(), secrets: InMemorySecretStore()), checkingEvery: interval)
        try await Task.sleep(for: .milliseconds(100))
        let checks = follower.checks
        follower.stop()
        let milliseconds = (ContinuousClock.now - started) / .milliseconds(1)
        if interval > .zero {
            #expect(checks == 0, "a year before the first check: \(checks)")
        } else {
            // NB: by the clock, not the sleep's 100 ms: a loaded machine sleeps longer.
            #expect(checks >= 5 && Double(checks) <= milliseconds + 10, "at most a check a millisecond: \(checks) in \(milliseconds) ms")
        }
    }

    @Test func aRefusedWatchFallsBackToPollingAndStillFollows() async throws {
        let directory = try TemporaryDirectory()
        let sessions = try sharedSessions(in: directory.url)
        let resolved = try #require(realpath(directory.path, nil).map { path in defer { free(path) }; return String(cString: path) })
        DirectoryWatch.refused.withLock { _ = $0.insert(resolved) }
        defer { _ = DirectoryWatch.refused.withLock { $0.remove(resolved) } }

        let app = makeStack()
        let follower = makeStack()
        let following = follower.followStore(sessions, checkingEvery: .milliseconds(10))
        #expect(!following.usesChangeFeed, "the kernel refused the watch: the follower polls")
        app.login(user: .grace, token: AuthToken("t"))
        try app.save(to: sessions)
        for _ in 0..<2_000 where follower.current.currentUser != .grace {
            try await Task.sleep(for: .milliseconds(1))
        }
        #expect(follower.current.currentUser == .grace)
        following.stop()
    }
}

/// A store that can't tell when it changes: the default feed, `nil`.
struct MockFreeStore: KeyValueStore {
    let base = InMemoryStore()
    func data(forKey key: String) throws(StoreError) -> Data? { try base.data(forKey: key) }
    func write(_ changes: [String: Data?]) throws(StoreError) { try base.write(changes) }
    func keys() throws(StoreError) -> [String] { try base.keys() }
}

/// A following process that is stopped (`SIGSTOP`) while the store changes several times, and
/// then resumed, takes the store's latest state: the kernel kept the events for it.
@Suite(.timeLimit(.minutes(1))) struct StoppedFollowerTests {
    @Test(.enabled(if: canRunFixtures))
    func aStoppedFollowerTakesTheLatestStateWhenResumed() async throws {
        let directory = try TemporaryDirectory()
        let sessions = try sharedSessions(in: directory.url)
        let app = makeStack()
        app.login(user: .ada, token: AuthToken("t0"))
        try app.save(to: sessions)

        let follower = sessionWorker("follow-print", directory.path)
        let output = Pipe()
        follower.standardOutput = output
        try follower.run()
        defer {
            _ = kill(follower.processIdentifier, SIGKILL)
            follower.waitUntilExit()
        }
        let lines = LineReader(output.fileHandleForReading)
        #expect(lines.next() == "ready feed")

        let pid = follower.processIdentifier
        #expect(kill(pid, SIGSTOP) == 0)
        // NB: resumed by a clock, not after the saves: a follower stopped while it held the
        // store's lock makes a save wait until it runs again (seen once under load: the test
        // hung, the saves waiting for a follower that only they would have resumed).
        // A dispatch timer, so that tests blocking the cooperative pool can't delay it.
        let resume = Task {
            await withCheckedContinuation { (done: CheckedContinuation<Int32, Never>) in
                DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(300)) { done.resume(returning: kill(pid, SIGCONT)) }
            }
        }
        app.logout()
        try app.save(to: sessions)
        app.login(user: .grace, token: AuthToken("t1"))
        try app.save(to: sessions)
        app.login(user: .ada, token: AuthToken("t2"))
        try app.save(to: sessions)
        app.login(user: .grace, token: AuthToken("t3"))
        try app.save(to: sessions)
        #expect(await resume.value == 0)

        // Whatever it printed on the way, the follower ends on the store's latest state. A
        // follower that stays silent is killed after 10 s, which ends the read.
        let watchdog = DispatchWorkItem { _ = kill(pid, SIGKILL) }
        DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(10), execute: watchdog)
        defer { watchdog.cancel() }
        var last: String?
        while last != "user Grace", let line = lines.next() { last = line }
        #expect(last == "user Grace", "the resumed follower took the latest sign-in")
    }
}

/// Lines from a pipe, read a byte at a time (the worker writes short lines).
final class LineReader: Sendable {
    let handle: FileHandle

    init(_ handle: FileHandle) {
        self.handle = handle
    }

    func next() -> String? {
        var bytes: [UInt8] = []
        var byte: UInt8 = 0
        while read(handle.fileDescriptor, &byte, 1) == 1 {
            if byte == UInt8(ascii: "\n") { return String(decoding: bytes, as: UTF8.self) }
            bytes.append(byte)
        }
        return nil
    }
}

/// User defaults' change feed: a signal by the store's prefix, posted by every write through a
/// `UserDefaultsStore` (a Darwin notification on Apple platforms, heard by every process; this
/// process's listeners elsewhere).
@Suite(.timeLimit(.minutes(1))) struct DefaultsFeedTests {
    /// Two stores over one suite with one prefix, as an app and its extension hold them, and a
    /// third over the same suite with another prefix. Each test has a prefix of its own, so a
    /// parallel test's writes never wake its feed.
    struct Suite {
        let watched: UserDefaultsStore
        let writer: UserDefaultsStore
        let neighbour: UserDefaultsStore
        let owner: KeyValueStoreContractTests.SuiteCleaner

        init() throws {
            let suite = "habitat-feed-\(UUID().uuidString)"
            let defaults = try #require(UserDefaults(suiteName: suite))
            let prefix = "feed-\(UUID().uuidString)."
            watched = UserDefaultsStore(defaults, prefix: prefix)
            writer = UserDefaultsStore(try #require(UserDefaults(suiteName: suite)), prefix: prefix)
            neighbour = UserDefaultsStore(defaults, prefix: "other-\(UUID().uuidString).")
            owner = KeyValueStoreContractTests.SuiteCleaner(defaults: defaults, suite: suite)
        }
    }

    @Test func aWriteThroughAnotherStoreWithThePrefixIsToldAndAnotherPrefixIsNot() async throws {
        let suite = try Suite()
        let calls = FeedCalls()
        let observation = try #require(suite.watched.observeChanges { calls.record() })
        try suite.neighbour.setData(Data("x".utf8), forKey: "k")
        try await Task.sleep(for: .milliseconds(100))
        #expect(calls.value == 0, "another prefix is another store")
        for round in 1...3 {
            let before = calls.value
            try suite.writer.setData(Data("\(round)".utf8), forKey: "k")
            #expect(await calls.waitBeyond(before), "round \(round)")
        }
        let before = calls.value
        try suite.writer.removeValue(forKey: "k")
        #expect(await calls.waitBeyond(before), "a removal is a change too")
        observation.stop()
        try await Task.sleep(for: .milliseconds(50))
        let stopped = calls.value
        try suite.writer.setData(Data("after".utf8), forKey: "k")
        try await Task.sleep(for: .milliseconds(200))
        #expect(calls.value == stopped, "a stopped feed calls nobody")
    }

    @Test func aFollowerOfUserDefaultsTakesAnotherStacksLoginAndLogoutAndIdlesWithoutWaking() async throws {
        let suite = try Suite()
        let secrets = InMemorySecretStore()
        let app = makeStack()
        let follower = makeStack()
        let following = follower.followStore(SessionStore(store: suite.watched, secrets: secrets), checkingEvery: .milliseconds(20))
        defer { following.stop() }
        #expect(following.usesChangeFeed)
        try await Task.sleep(for: .milliseconds(300))
        #expect(following.checks <= 1, "the feed's one check at start, then nothing (polling would have made 15): \(following.checks)")

        let written = SessionStore<TestApp>(store: suite.writer, secrets: secrets)
        app.login(user: .grace, token: AuthToken("t"))
        try app.save(to: written)
        for _ in 0..<2_000 where follower.current.currentUser != .grace {
            try await Task.sleep(for: .milliseconds(1))
        }
        #expect(follower.current.currentUser == .grace, "the login reached the follower")
        try app.logout(savingTo: written)
        for _ in 0..<2_000 where follower.current.session != nil {
            try await Task.sleep(for: .milliseconds(1))
        }
        #expect(follower.current.session == nil, "and so did the logout")
    }

    @Test func theSignalsNameIsTheSameInEveryProcessAndApartForEachStore() {
        // FNV-1a of nothing is its offset basis: the name doesn't depend on a per-process seed.
        #expect(ChangeSignal(store: "").name == "org.habitat.store.cbf29ce484222325")
        #expect(ChangeSignal(store: "defaults:h.").name == ChangeSignal(store: "defaults:h.").name)
        #expect(ChangeSignal(store: "/a/store.json").name != ChangeSignal(store: "/b/store.json").name)
    }
}
