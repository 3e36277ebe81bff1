// How Habitat's costs grow with the work, side by side with a floor or a peer in the same run:
// many scopes open at once, change subscribers, document size, reads under write churn.
//
//     habitat-growth [--smoke]
//
// Prints one tab-separated line per measurement: group, size, side, metric, value. Sides of a
// group run alternately, repetition by repetition, so drift on a noisy machine hits both alike;
// each value is the median of the repetitions. `summarize.py` turns the lines into tables.

import BenchHeap
import BenchSupport
import Dependencies
import Foundation
import Habitat
import HabitatPersistence

let smoke = CommandLine.arguments.contains("--smoke")

func emit(_ group: String, _ size: Int, _ side: String, _ metric: String, _ value: Double) {
    print("\(group)\t\(size)\t\(side)\t\(metric)\t\(value)")
}

func nanoseconds(_ body: () throws -> Void) rethrows -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try body()
    return Double(DispatchTime.now().uptimeNanoseconds - start)
}

func nanoseconds(_ body: () async throws -> Void) async rethrows -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try await body()
    return Double(DispatchTime.now().uptimeNanoseconds - start)
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

/// How many repetitions a measurement of about `estimate` nanoseconds gets: enough for a steady
/// median, few enough that the whole run stays within minutes.
func repetitions(estimate: Double) -> Int {
    if smoke { return 1 }
    return min(31, max(5, Int(300_000_000 / max(estimate, 1))))
}

// MARK: Many scopes open at once

/// Holds every task until all `expected` have arrived (so all their scopes are open at once),
/// notes the heap in use at that moment, then lets them all go.
// Safe: `waiting` and `heapAtFull` are only touched with `lock` held.
final class Gate: @unchecked Sendable {
    private let lock = NSLock()
    private var waiting: [CheckedContinuation<Void, Never>] = []
    private let expected: Int
    private var heapAtFull = 0

    init(expected: Int) {
        self.expected = expected
        waiting.reserveCapacity(expected)
    }

    func arrive() async {
        await withCheckedContinuation { continuation in
            lock.lock()
            waiting.append(continuation)
            guard waiting.count == expected else { return lock.unlock() }
            heapAtFull = bench_heap_in_use()
            let all = waiting
            waiting.removeAll(keepingCapacity: true)
            lock.unlock()
            for waiter in all { waiter.resume() }
        }
    }

    var heap: Int {
        lock.lock()
        defer { lock.unlock() }
        return heapAtFull
    }
}

let scopeStack = EnvironmentStack<BenchApp>(makeEnvironment())

/// `tasks` tasks, each inside a scope of its own with one field changed, each doing 100 reads and
/// one push + pop (or the side's equivalent: a nested override), all scopes open at once.
/// Returns the heap in use when all were open.
func openScopes(_ side: String, tasks: Int) async -> Int {
    let gate = Gate(expected: tasks)
    await withTaskGroup(of: Void.self) { group in
        for index in 0..<tasks {
            group.addTask {
                switch side {
                case "habitat":
                    await scopeStack.withEnvironment({ $0.config.timeout = index }) {
                        for _ in 0..<100 { sink(scopeStack.current.config.timeout) }
                        scopeStack.push { $0.config.timeout = index + 1 }
                        scopeStack.pop()
                        await gate.arrive()
                    }
                case "swift-dependencies":
                    await withDependencies { $0.benchConfig = BenchConfig(timeout: index) } operation: {
                        let reader = DependencyReader()
                        for _ in 0..<100 { sink(reader.config.timeout) }
                        withDependencies { $0.benchConfig = BenchConfig(timeout: index + 1) } operation: {}
                        await gate.arrive()
                    }
                case "tasklocal":
                    var environment = BareTaskLocal.box.environment
                    environment.config.timeout = index
                    await BareTaskLocal.$box.withValue(EnvironmentBox(environment)) {
                        for _ in 0..<100 { sink(BareTaskLocal.box.environment.config.timeout) }
                        var inner = BareTaskLocal.box.environment
                        inner.config.timeout = index + 1
                        BareTaskLocal.$box.withValue(EnvironmentBox(inner)) {}
                        await gate.arrive()
                    }
                default:  // the baseline: the same tasks and reads, no scope
                    for _ in 0..<100 { sink(scopeStack.current.config.timeout) }
                    await gate.arrive()
                }
            }
        }
    }
    return gate.heap
}

func measureScopes() async {
    let sides = ["habitat", "swift-dependencies", "tasklocal"]
    for tasks in smoke ? [100] : [100, 1_000, 10_000] {
        var times: [String: [Double]] = [:]
        var heaps: [String: [Double]] = [:]
        let reps = smoke ? 1 : (tasks >= 10_000 ? 5 : 9)
        for _ in 0..<reps {
            var baseline = 0
            _ = await nanoseconds { baseline = await openScopes("baseline", tasks: tasks) }
            for side in sides {
                var heap = 0
                let time = await nanoseconds { heap = await openScopes(side, tasks: tasks) }
                times[side, default: []].append(time)
                heaps[side, default: []].append(Double(heap - baseline) / Double(tasks))
            }
        }
        for side in sides {
            emit("concurrent-scopes", tasks, side, "total_ns", median(times[side]!))
            emit("concurrent-scopes", tasks, side, "heap_bytes_per_scope", median(heaps[side]!))
        }
    }
}

// MARK: Change subscribers

/// A flag one thread sets and another polls.
// Safe: `value` is only touched with `lock` held.
final class Flag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    func set() { lock.lock(); value = true; lock.unlock() }
    var isSet: Bool { lock.lock(); defer { lock.unlock() }; return value }
}

/// Reads in blocks of 1,000 on a thread of its own until stopped; the slowest block, in ns.
func readBlocks(_ read: @escaping @Sendable () -> Int) -> () -> Double {
    let stop = Flag()
    let done = DispatchSemaphore(value: 0)
    let worst = LockedValue(0.0)
    Thread.detachNewThread {
        var slowest = 0.0
        repeat {
            let time = nanoseconds { for _ in 0..<1_000 { sink(read()) } }
            slowest = max(slowest, time)
        } while !stop.isSet
        worst.set(slowest)
        done.signal()
    }
    return {
        stop.set()
        done.wait()
        return worst.get()
    }
}

// Safe: `value` is only touched with `lock` held.
final class LockedValue<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value
    init(_ value: Value) { self.value = value }
    func set(_ newValue: Value) { lock.lock(); value = newValue; lock.unlock() }
    func get() -> Value { lock.lock(); defer { lock.unlock() }; return value }
}

/// Login + logout for `duration` ns with `subscribers` change streams, while another thread
/// reads. Returns (ns per login + logout, slowest 1,000-read block in ns).
///
/// Every run lasts the same time: the slowest block of a longer run is more likely to include
/// a moment the system took the reader's core, whatever the stack does.
///
/// `consuming`: a task per stream reads every change. On two cores those tasks take the CPU from
/// the reading thread, so its slowest block measures the scheduler as much as the stack. Idle
/// subscribers (bounded to their newest change, never read) cost the writer the same fan-out
/// and take no CPU, so the reader's slowest block shows what the writer's lock costs it.
func subscribed(_ side: String, subscribers: Int, duration: UInt64, consuming: Bool) async -> (Double, Double) {
    let token = AuthToken("t")
    var consumers: [Task<Void, Never>] = []
    var time = 0.0
    var worst = 0.0
    if side == "habitat" {
        let stack = EnvironmentStack<BenchApp>(makeEnvironment())
        var idle: [AsyncStream<EnvironmentChange<BenchApp>>] = []
        for _ in 0..<subscribers {
            guard consuming else {
                idle.append(stack.changes(bufferingPolicy: .bufferingNewest(1)))
                continue
            }
            let changes = stack.changes
            consumers.append(Task { for await change in changes { sink(change.kind) } })
        }
        defer { withExtendedLifetime(idle) {} }
        let stopReading = readBlocks { stack.current.config.timeout }
        time = repeatFor(duration) {
            stack.login(user: benchUser, token: token)
            stack.logout()
        }
        worst = stopReading()
    } else if side == "streams" {
        // The control: no stack and no lock. The same subscribers on plain streams, fed the same
        // two changes, while the reader reads a value nothing writes. Its slowest block is what
        // the scheduler alone costs the reader, whatever a stack does.
        let environment = ReadOnlyEnvironment(makeEnvironment())
        let (continuations, idle) = plainSubscribers(subscribers, consuming: consuming, tasks: &consumers)
        defer { withExtendedLifetime(idle) {} }
        let stopReading = readBlocks { environment.timeout() }
        var current = makeEnvironment()
        func change(_ body: (inout HabitatEnvironment<BenchApp>) -> Void) {
            let old = current
            body(&current)
            for continuation in continuations { continuation.yield((old, current)) }
        }
        time = repeatFor(duration) {
            change { $0.session = UserSession(user: benchUser, token: token) }
            change { $0.session = nil }
        }
        worst = stopReading()
        for continuation in continuations { continuation.finish() }
    } else {
        // The floor: the same two in-place changes on a mutex-guarded array, each change handed
        // to every subscriber's stream under the lock (so all see them in order).
        let locked = LockedArrayStack(makeEnvironment())
        let (continuations, idle) = plainSubscribers(subscribers, consuming: consuming, tasks: &consumers)
        defer { withExtendedLifetime(idle) {} }
        let stopReading = readBlocks { locked.readTimeout() }
        func change(_ body: (inout HabitatEnvironment<BenchApp>) -> Void) {
            locked.mutex.lock()
            let old = locked.frames[locked.frames.count - 1]
            body(&locked.frames[locked.frames.count - 1])
            let new = locked.frames[locked.frames.count - 1]
            for continuation in continuations { continuation.yield((old, new)) }
            locked.mutex.unlock()
        }
        time = repeatFor(duration) {
            change { $0.session = UserSession(user: benchUser, token: token) }
            change { $0.session = nil }
        }
        worst = stopReading()
        for continuation in continuations { continuation.finish() }
    }
    for consumer in consumers { consumer.cancel() }
    for consumer in consumers { await consumer.value }
    return (time, worst)
}

/// A change as the floor and the control hand it to their subscribers: the old and new environment.
typealias PlainChange = (HabitatEnvironment<BenchApp>, HabitatEnvironment<BenchApp>)

/// `count` plain streams of changes, each drained by a task added to `tasks` (consuming), or
/// bounded to its newest change and returned in `idle` to be kept, never read.
func plainSubscribers(
    _ count: Int,
    consuming: Bool,
    tasks: inout [Task<Void, Never>]
) -> (continuations: [AsyncStream<PlainChange>.Continuation], idle: [AsyncStream<PlainChange>]) {
    var continuations: [AsyncStream<PlainChange>.Continuation] = []
    var idle: [AsyncStream<PlainChange>] = []
    for _ in 0..<count {
        let (stream, continuation) = AsyncStream<PlainChange>.makeStream(bufferingPolicy: consuming ? .unbounded : .bufferingNewest(1))
        continuations.append(continuation)
        guard consuming else {
            idle.append(stream)
            continue
        }
        tasks.append(Task { for await change in stream { sink(change.1.session != nil) } })
    }
    return (continuations, idle)
}

/// An environment nobody writes, read through a call the optimiser can't see through, as a
/// stack's read is.
final class ReadOnlyEnvironment: Sendable {
    let environment: HabitatEnvironment<BenchApp>
    init(_ environment: HabitatEnvironment<BenchApp>) { self.environment = environment }
    @inline(never) func timeout() -> Int { environment.config.timeout }
}

/// Runs `body` again and again for `duration` ns; the time per run, in ns.
func repeatFor(_ duration: UInt64, _ body: () -> Void) -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    var runs = 0
    var now = start
    while now - start < duration {
        body()
        runs += 1
        now = DispatchTime.now().uptimeNanoseconds
    }
    return Double(now - start) / Double(runs)
}

func measureSubscribers() async {
    let duration: UInt64 = smoke ? 5_000_000 : 200_000_000
    for (group, consuming) in [("subscribers", true), ("idle-subscribers", false)] {
        for subscribers in smoke ? [0, 10] : [0, 1, 10, 100] {
            var times: [String: [Double]] = [:]
            var worst: [String: [Double]] = [:]
            for _ in 0..<(smoke ? 1 : 7) {
                for side in ["habitat", "floor", "streams"] {
                    let (time, slowest) = await subscribed(side, subscribers: subscribers, duration: duration, consuming: consuming)
                    times[side, default: []].append(time)
                    worst[side, default: []].append(slowest)
                }
            }
            for side in ["habitat", "floor", "streams"] {
                emit(group, subscribers, side, "ns_per_login_logout", median(times[side]!))
                emit(group, subscribers, side, "worst_1000_reads_ns", median(worst[side]!))
            }
        }
    }
}

// MARK: Document size

func measureDocuments() throws {
    let directory = benchDirectory("documents")
    let key = StoreKey<String>("key-5")
    for keys in smoke ? [10] : [10, 1_000, 10_000] {
        let place = directory.appendingPathComponent("\(keys)")
        let store = try JSONFileStore(url: place.appendingPathComponent("store.json"))
        var values: [String: String] = [:]
        for index in 0..<keys { values["key-\(index)"] = "value-\(index)" }
        try store.write(values.mapValues { Optional(try! JSONEncoder().encode($0)) })
        let plainPath = place.appendingPathComponent("plain.json").path
        try durableWrite(JSONEncoder().encode(values), to: plainPath)

        let sessions = SessionStore<BenchApp>(
            store: try JSONFileStore(url: place.appendingPathComponent("session.json")),
            secrets: try FileSecretStore(directory: place.appendingPathComponent("secrets"))
        )
        let environment = makeEnvironment(configKeys: keys).with(\.session, UserSession(user: benchUser, token: AuthToken("bench-token")))
        let snapshotStack = EnvironmentStack<BenchApp>(environment)
        try snapshotStack.save(to: sessions)
        let snapshotPath = place.appendingPathComponent("snapshot.json").path
        let tokenPath = place.appendingPathComponent("snapshot.token").path
        try durableWrite(JSONEncoder().encode(PlainSnapshot(version: 1, user: benchUser, config: environment.config)), to: snapshotPath)
        try durableWrite(Data("bench-token".utf8), to: tokenPath)

        var counter = 0
        let cases: [(group: String, side: String, body: () throws -> Void)] = [
            ("store-read", "habitat", { sink(try store.value(for: key)) }),
            ("store-read", "floor", {
                let document = try JSONDecoder().decode([String: String].self, from: Data(contentsOf: URL(fileURLWithPath: plainPath)))
                sink(document["key-5"])
            }),
            ("store-write", "habitat", {
                counter += 1
                try store.set("changed-\(counter)", for: key)
            }),
            ("store-write", "floor", {
                // Read, change one key, write durably: the same work without the store's lock file.
                counter += 1
                var document = try JSONDecoder().decode([String: String].self, from: Data(contentsOf: URL(fileURLWithPath: plainPath)))
                document["key-5"] = "changed-\(counter)"
                try durableWrite(JSONEncoder().encode(document), to: plainPath)
            }),
            ("restore", "habitat", { sink(try snapshotStack.restore(from: sessions)) }),
            ("restore", "floor", {
                sink(try JSONDecoder().decode(PlainSnapshot.self, from: Data(contentsOf: URL(fileURLWithPath: snapshotPath))))
                sink(try Data(contentsOf: URL(fileURLWithPath: tokenPath)))
            }),
        ]
        for group in ["store-read", "store-write", "restore"] {
            let sides = cases.filter { $0.group == group }
            let estimate = try nanoseconds { try sides[0].body() }
            var samples: [String: [Double]] = [:]
            for _ in 0..<repetitions(estimate: estimate) {
                for side in sides { samples[side.side, default: []].append(try nanoseconds(side.body)) }
            }
            for side in sides { emit(group, keys, side.side, "ns", median(samples[side.side]!)) }
        }
    }
    try? FileManager.default.removeItem(at: directory)
}

// MARK: Reads under write churn

/// Per-read ns on one thread while `writers` other threads push and pop without pause.
func churn(_ side: String, writers: Int, reads: Int) -> Double {
    let stack = EnvironmentStack<BenchApp>(makeEnvironment())
    let locked = LockedArrayStack(makeEnvironment())
    let stop = Flag()
    let stopped = DispatchSemaphore(value: 0)
    let started = DispatchSemaphore(value: 0)
    for _ in 0..<writers {
        Thread.detachNewThread {
            started.signal()
            var index = 0
            repeat {
                for _ in 0..<100 {
                    index &+= 1
                    if side == "habitat" {
                        stack.push { $0.config.timeout = index }
                        stack.pop()
                    } else {
                        locked.push(timeout: index)
                        locked.pop()
                    }
                }
            } while !stop.isSet
            stopped.signal()
        }
    }
    for _ in 0..<writers { started.wait() }
    let time = nanoseconds {
        if side == "habitat" {
            for _ in 0..<reads { sink(stack.current.config.timeout) }
        } else {
            for _ in 0..<reads { sink(locked.readTimeout()) }
        }
    }
    stop.set()
    for _ in 0..<writers { stopped.wait() }
    return time / Double(reads)
}

func measureChurn() {
    let reads = smoke ? 10_000 : 2_000_000
    for writers in [0, 1] {
        var samples: [String: [Double]] = [:]
        for _ in 0..<(smoke ? 1 : 9) {
            for side in ["habitat", "floor"] { samples[side, default: []].append(churn(side, writers: writers, reads: reads)) }
        }
        for side in ["habitat", "floor"] { emit("churn", writers, side, "ns_per_read", median(samples[side]!)) }
    }
}

// `--only documents|churn|subscribers|scopes` measures one section.
let only = CommandLine.arguments.firstIndex(of: "--only").map { CommandLine.arguments[$0 + 1] }
if only == nil || only == "documents" { try measureDocuments() }
if only == nil || only == "churn" { measureChurn() }
if only == nil || only == "subscribers" { await measureSubscribers() }
if only == nil || only == "scopes" { await measureScopes() }
