import Foundation
import HabitatPostgres
import HabitatServerSessions
import PostgresNIO
import Testing

/// The per-instance cache: copies used only while the feed is live, dropped by every change it
/// tells, never kept from a read a change overtook, never past the session's expiry.
@Suite struct CachedSessionBackendTests {
    let data = Data("member".utf8)

    @Test func aCachedReadGoesNowhereAndAnotherInstancesRemovalEndsIt() async throws {
        let store = MemorySessionBackend()
        let reads = ReadCounter(store)
        let cache = CachedSessionBackend(reads, changes: store)
        try await following(cache) {
            _ = try await store.create(id: "k", data: data, expiresIn: .seconds(60))
            #expect(try await cache.get(id: "k")?.version == 1)
            for _ in 0..<10 { #expect(try await cache.get(id: "k")?.version == 1) }
            #expect(reads.count == 1, "one read of the store, then copies")
            #expect(cache.counts.hits == 10)

            // Another instance (the store itself here) writes, then signs the member out.
            _ = try await store.set(id: "k", data: Data("renamed".utf8), expiresIn: .seconds(60), expectedVersion: 1)
            #expect(try await cache.get(id: "k")?.data == Data("renamed".utf8), "the write dropped the copy")
            try await store.remove(id: "k")
            #expect(try await cache.get(id: "k") == nil, "a removal elsewhere is refused here at once")
        }
    }

    @Test func aLostFeedSendsEveryReadToTheStoreUntilItIsBack() async throws {
        let store = MemorySessionBackend()
        let reads = ReadCounter(store)
        let feed = ManualChanges()
        let lost = Reasons()
        let cache = CachedSessionBackend(reads, changes: feed, onLost: { lost.append($0) })
        try await following(cache) {
            await feed.send(.live)
            _ = try await store.create(id: "k", data: data, expiresIn: .seconds(60))
            _ = try await cache.get(id: "k")
            _ = try await cache.get(id: "k")
            #expect(reads.count == 1)

            await feed.send(.lost("the connection dropped"))
            await feed.send(.lost("still down"))
            #expect(!cache.isLive)
            try await store.remove(id: "k")   // a change the feed missed
            #expect(try await cache.get(id: "k") == nil, "no copy is trusted while the feed is lost")
            _ = try await store.create(id: "k", data: data, expiresIn: .seconds(60))
            _ = try await cache.get(id: "k")
            _ = try await cache.get(id: "k")
            #expect(reads.count == 4, "every read went to the store")
            #expect(lost.all == ["the connection dropped"], "told once per outage")

            await feed.send(.live)
            try await waitUntil { cache.counts.restored == 1 }
            #expect(reads.count == 5, "the copy put aside was read again")
            _ = try await cache.get(id: "k")
            _ = try await cache.get(id: "k")
            #expect(reads.count == 5, "copies again once it is back")
        }
    }

    /// A feed that gives deadlines and then says nothing (hung, or its connection silent)
    /// stops the copies by itself: past the deadline every read goes to the store, so a removal
    /// the feed never told is refused; heard again, the same connection's copies stand.
    @Test func aFeedThatFallsSilentStopsItsCopiesAtItsDeadline() async throws {
        let store = MemorySessionBackend()
        let reads = ReadCounter(store)
        let feed = ManualChanges()
        let lost = Reasons()
        let cache = CachedSessionBackend(reads, changes: feed, onLost: { lost.append($0) })
        let clock = ContinuousClock()
        try await following(cache) {
            let deadline = clock.now + .seconds(2)
            await feed.send(.liveUntil(deadline))
            await feed.send(.liveUntil(deadline - .seconds(1)))   // an earlier deadline doesn't shorten it
            for id in ["k", "other"] {
                _ = try await store.create(id: id, data: data, expiresIn: .seconds(60))
                _ = try await cache.get(id: id)
            }
            _ = try await cache.get(id: "k")
            if clock.now < deadline - .milliseconds(500) {   // a loaded machine may be slower
                #expect(cache.isLive)
                #expect(reads.count == 2, "copies while the deadline holds")
            }

            // The feed says nothing more; a sign-out it never tells.
            try await store.remove(id: "k")
            try await clock.sleep(until: deadline + .milliseconds(50))
            #expect(!cache.isLive)
            let before = reads.count
            #expect(try await cache.get(id: "k") == nil, "past the deadline the store is read: the sign-out is refused")
            _ = try await cache.get(id: "other")
            _ = try await cache.get(id: "other")
            #expect(reads.count == before + 3, "every read went to the store")

            // Heard again on the same connection: nothing was missed, its copies are used again.
            await feed.send(.liveUntil(clock.now + .seconds(60)))
            #expect(cache.isLive)
            _ = try await cache.get(id: "other")
            #expect(reads.count == before + 3, "the copy is served again")
            #expect(lost.all.isEmpty, "a deadline passing is not a loss: the feed says when it is lost")
        }
    }

    @Test func aFeedThatIsBackCatchesUpInOneReadAndTakesWhatChangedMeanwhile() async throws {
        let store = MemorySessionBackend()
        let reads = ReadCounter(store)
        let feed = ManualChanges()
        let cache = CachedSessionBackend(reads, changes: feed)
        try await following(cache) {
            await feed.send(.live)
            for id in ["a", "b", "c"] {
                _ = try await store.create(id: id, data: data, expiresIn: .seconds(60))
                _ = try await cache.get(id: id)
            }
            #expect(reads.count == 3)

            await feed.send(.lost("restarted"))
            // Changes the feed missed: b signed out, c rewritten.
            try await store.remove(id: "b")
            _ = try await store.set(id: "c", data: Data("two".utf8), expiresIn: .seconds(60), expectedVersion: 1)
            await feed.send(.live)
            try await waitUntil { cache.counts.restored == 2 }
            #expect(reads.bulk == 1, "one read for every copy put aside")

            let before = reads.count
            #expect(try await cache.get(id: "a")?.data == data)
            #expect(try await cache.get(id: "c")?.data == Data("two".utf8), "what changed meanwhile is read as it is now")
            #expect(reads.count == before, "a and c are copies again")
            #expect(try await cache.get(id: "b") == nil, "a sign-out during the outage is refused")
            #expect(reads.count == before + 1, "b was not kept: it went to the store")
        }
    }

    @Test func aChangeToldWhileCatchingUpWins() async throws {
        let store = MemorySessionBackend()
        let gate = GatedReads(store)
        let feed = ManualChanges()
        let cache = CachedSessionBackend(gate, changes: feed)
        try await following(cache) {
            await feed.send(.live)
            _ = try await store.create(id: "k", data: data, expiresIn: .seconds(60))
            _ = try await cache.get(id: "k")
            await feed.send(.lost("restarted"))
            gate.hold()
            await feed.send(.live)
            #expect(await gate.waitUntilHeld(), "the catch-up reads the copy put aside")
            // The catch-up read version 1; meanwhile another instance signs the member out.
            try await store.remove(id: "k")
            await feed.send(.changed(id: "k", version: nil))
            gate.release()
            // Given time to land (a catch-up applies at once after its read), it keeps nothing.
            for _ in 0..<100 where cache.counts.restored == 0 { try await Task.sleep(for: .milliseconds(10)) }
            #expect(cache.counts.restored == 0, "the catch-up's answer was not kept")
            #expect(try await cache.get(id: "k") == nil)
        }
    }

    @Test func aReadThatAChangeOvertookIsNotKept() async throws {
        let store = MemorySessionBackend()
        let gate = GatedReads(store)
        let feed = ManualChanges()
        let cache = CachedSessionBackend(gate, changes: feed)
        try await following(cache) {
            await feed.send(.live)
            _ = try await store.create(id: "k", data: data, expiresIn: .seconds(60))
            gate.hold()
            async let slow = cache.get(id: "k")
            #expect(await gate.waitUntilHeld())
            // The store read version 1; meanwhile another instance signs the member out.
            await feed.send(.changed(id: "k", version: nil))
            gate.release()
            #expect(try await slow?.version == 1, "the read answers what it read")
            try await store.remove(id: "k")
            #expect(try await cache.get(id: "k") == nil, "but its answer was not kept")
        }
    }

    @Test func aCopyEndsWithItsSession() async throws {
        let store = MemorySessionBackend()
        let cache = CachedSessionBackend(store, changes: store)
        try await following(cache) {
            let clock = ContinuousClock(), start = clock.now
            _ = try await store.create(id: "k", data: data, expiresIn: .milliseconds(300))
            let read = try await cache.get(id: "k")
            if clock.now - start < .milliseconds(300) { #expect(read != nil) }   // a loaded machine may be slower
            try await Task.sleep(until: clock.now + .milliseconds(400), clock: clock)
            #expect(try await cache.get(id: "k") == nil, "expired: the copy is not served")
        }
    }

    @Test func aWriteThroughTheCacheDropsItsCopy() async throws {
        let store = MemorySessionBackend()
        let reads = ReadCounter(store)
        let feed = ManualChanges()
        let cache = CachedSessionBackend(reads, changes: feed)
        try await following(cache) {
            await feed.send(.live)
            let created = try await cache.create(id: "k", data: data, expiresIn: .seconds(60))
            _ = try await cache.get(id: "k")
            _ = try await cache.set(id: "k", data: Data("two".utf8), expiresIn: .seconds(60), expectedVersion: created.version)
            #expect(try await cache.get(id: "k")?.version == 2, "the instance's own write is read back, not its old copy")
            try await cache.remove(id: "k")
            #expect(try await cache.get(id: "k") == nil)
        }
    }

    /// Two instances on one PostgreSQL, each with its cache: a sign-out at one is refused at the
    /// other as soon as the notification arrives, and a cached read runs no statement.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["HABITAT_POSTGRES_URL"] != nil))
    func onPostgreSQLASignOutAtOneInstanceReachesTheOther() async throws {
        let url = try #require(ProcessInfo.processInfo.environment["HABITAT_POSTGRES_URL"])
        try await withPostgres(url: url) { one in
            try await one.migrate()
            try await withPostgres(url: url) { two in
                let lost = Reasons()
                let cache = CachedSessionBackend(two, changes: PostgresSessionChanges(client: two.client, heartbeat: .milliseconds(500)), onLost: { lost.append($0) })
                try await following(cache) {
                    try await waitUntil { cache.isLive }
                    let id = "cache-test-\(UUID().uuidString)"
                    _ = try await one.create(id: id, data: data, expiresIn: .seconds(60))
                    // NB: the create's own notification may arrive while the first read runs;
                    // that read then keeps no copy (the change may be newer than what it read),
                    // and a later one does. Read until a read is served from the copy.
                    try await waitUntil {
                        let before = cache.counts.hits
                        _ = try? await cache.get(id: id)
                        return cache.counts.hits > before
                    }
                    let before = cache.counts.hits
                    for _ in 0..<5 { #expect(try await cache.get(id: id) != nil) }
                    #expect(cache.counts.hits == before + 5, "cached reads ran no statement (lost: \(lost.all))")

                    let start = ContinuousClock.now
                    try await one.remove(id: id)
                    try await waitUntil { (try? await cache.get(id: id)) == nil }
                    let took = ContinuousClock.now - start
                    #expect(took < .seconds(1), "the sign-out reached the other instance in \(took)")
                }
            }
        }
    }
}

/// Runs `body` while `cache` follows its feed.
func following<R: Sendable>(_ cache: CachedSessionBackend, _ body: () async throws -> R) async throws -> R {
    try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { await cache.follow() }
        defer { group.cancelAll() }
        if cache.changes is MemorySessionBackend { try await waitUntil { cache.isLive } }
        return try await body()
    }
}

/// Waits (up to 5 s) until `condition` holds.
func waitUntil(_ condition: () async -> Bool) async throws {
    let deadline = ContinuousClock.now + .seconds(5)
    while await !condition() {
        guard ContinuousClock.now < deadline else { Issue.record("waited 5 s in vain"); return }
        try await Task.sleep(for: .milliseconds(5))
    }
}

/// A feed the test drives.
final class ManualChanges: SessionChanges {
    private let handler = LockedBox<(@Sendable (SessionChange) -> Void)?>(nil)

    func follow(_ handle: @escaping @Sendable (SessionChange) -> Void) async {
        handler.withLock { $0 = handle }
        let (wait, open) = AsyncStream<Never>.makeStream()
        for await _ in wait {}
        open.finish()
    }

    func send(_ change: SessionChange) async {
        // NB: the follower registers itself in a task of its own; wait for it, yielding the
        // thread (a blocking wait starved that task when every thread waited: a hang).
        while handler.withLock({ $0 }) == nil { try? await Task.sleep(for: .milliseconds(1)) }
        handler.withLock { $0 }?(change)
    }
}

/// Reasons told to `onLost`.
final class Reasons: Sendable {
    private let value = LockedBox<[String]>([])
    func append(_ reason: String) { value.withLock { $0.append(reason) } }
    var all: [String] { value.withLock { $0 } }
}

/// A backend that counts the reads that reach it: each session read, and each bulk read (whose
/// sessions are counted as reads too).
struct ReadCounter: ForwardingBackend {
    let base: any SessionBackend
    private let reads = Counter()
    private let bulkReads = Counter()
    init(_ base: any SessionBackend) { self.base = base }
    var count: Int { reads.value }
    var bulk: Int { bulkReads.value }

    func get(ids: [String]) async throws(SessionBackendError) -> [String: StoredSession] {
        bulkReads.increment()
        var sessions: [String: StoredSession] = [:]
        for id in ids {
            if let session = try await get(id: id) { sessions[id] = session }
        }
        return sessions
    }

    func get(id: String) async throws(SessionBackendError) -> StoredSession? {
        reads.increment()
        return try await base.get(id: id)
    }
}

/// A backend whose reads wait, when told to, until released: to overtake a read with a change.
final class GatedReads: ForwardingBackend {
    let base: any SessionBackend
    private let state = LockedBox<(holding: Bool, held: Bool, waiter: CheckedContinuation<Void, Never>?)>((false, false, nil))
    init(_ base: any SessionBackend) { self.base = base }

    func hold() { state.withLock { $0.holding = true } }
    func release() {
        let waiter = state.withLock { state in
            state.holding = false
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }
    /// Waits until a read is held, for at most 5 s; says whether one is.
    @discardableResult
    func waitUntilHeld() async -> Bool {
        let deadline = ContinuousClock.now + .seconds(5)
        while !state.withLock({ $0.held }) {
            guard ContinuousClock.now < deadline else { return false }
            try? await Task.sleep(for: .milliseconds(1))
        }
        return true
    }

    func get(id: String) async throws(SessionBackendError) -> StoredSession? {
        let read = try await base.get(id: id)
        if state.withLock({ $0.holding }) {
            await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state in
                    guard state.holding else { return true }
                    state.waiter = waiter
                    state.held = true
                    return false
                }
                if now { waiter.resume() }
            }
        }
        return read
    }
}
