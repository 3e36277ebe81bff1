// Every Habitat row and what it is compared with, measured in the same run.
//
// Names are "<row>/<side>": compare.sh pairs them into the results table. Each benchmark runs
// `scaledIterations` inner operations per measured iteration, so its per-iteration numbers
// divided by the scaling factor are per operation.

import Benchmark
import Dependencies
import Foundation
import Habitat
import Swinject

#if canImport(Glibc)
import Glibc
#endif

// MARK: The world being read

struct BenchUser: Codable, Sendable { var id: Int; var name: String }

struct BenchConfig: Codable, Sendable {
    var timeout = 30
    var flags: [String: String] = [:]
}

struct BenchServices: Sendable {
    var api = "live"
    var analytics = "live"
}

enum BenchApp: EnvironmentSchema {
    typealias Services = BenchServices
    typealias User = BenchUser
    typealias Config = BenchConfig
}

/// The floor: a plain global struct.
struct PlainEnvironment { var timeout = 30 }
nonisolated(unsafe) var plainGlobal = PlainEnvironment()

let stack = EnvironmentStack<BenchApp>(Environment(services: BenchServices(), config: BenchConfig()))

// swift-dependencies: the same configuration as a dependency.
private enum BenchConfigKey: DependencyKey {
    static let liveValue = BenchConfig()
}
extension DependencyValues {
    var benchConfig: BenchConfig {
        get { self[BenchConfigKey.self] }
        set { self[BenchConfigKey.self] = newValue }
    }
}
struct DependencyReader {
    @Dependency(\.benchConfig) var config
}

/// A plain pthread mutex, for the floor of a thread-safe stack.
final class PlainMutex: @unchecked Sendable {
    // Safe: the mutex is only used through pthread_mutex_lock/unlock.
    let mutex: UnsafeMutablePointer<pthread_mutex_t>
    init() {
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
    }
    func lock() { pthread_mutex_lock(mutex) }
    func unlock() { pthread_mutex_unlock(mutex) }
}

/// The snapshot benchmarks' world: a user and a configuration of 50 keys.
func snapshotEnvironment() -> Environment<BenchApp> {
    var config = BenchConfig()
    for index in 0..<50 { config.flags["flag-\(index)"] = "value-\(index)" }
    return Environment(services: BenchServices(), config: config)
        .loggingIn(user: BenchUser(id: 1, name: "Ada"), token: AccessToken("bench-token"))
}

/// What the floor encodes: the same user and configuration, plainly.
struct PlainSnapshot: Codable {
    var version: Int
    var user: BenchUser
    var config: BenchConfig
}

/// Runs `body` on two threads at once, `perThread` times each, and waits for both.
func onTwoThreads(perThread: Int, _ body: @escaping @Sendable (Int) -> Void) -> (start: () -> Void, wait: () -> Void) {
    let go = DispatchSemaphore(value: 0)
    let done = DispatchSemaphore(value: 0)
    for _ in 0..<2 {
        Thread.detachNewThread {
            go.wait()
            body(perThread)
            done.signal()
        }
    }
    return ({ go.signal(); go.signal() }, { done.wait(); done.wait() })
}

@inline(never)
func readHabitat(_ count: Int) -> Int {
    var total = 0
    for _ in 0..<count { total &+= stack.current.config.timeout }
    return total
}

@inline(never)
func readDependencies(_ count: Int) -> Int {
    let reader = DependencyReader()
    var total = 0
    for _ in 0..<count { total &+= reader.config.timeout }
    return total
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .instructions, .mallocCountTotal],
        timeUnits: .nanoseconds,
        warmupIterations: 3,
        scalingFactor: .kilo,
        maxDuration: .seconds(2),
        maxIterations: 2_000
    )
    let options = ProcessInfo.processInfo.environment
    if let iterations = options["HABITAT_BENCH_ITERATIONS"].flatMap(Int.init) {
        // The CI smoke pass: a few iterations of everything, no targets checked.
        Benchmark.defaultConfiguration.maxIterations = iterations
        Benchmark.defaultConfiguration.warmupIterations = 0
        Benchmark.defaultConfiguration.maxDuration = .milliseconds(200)
    }
    let fastRead = Benchmark.Configuration(
        metrics: Benchmark.defaultConfiguration.metrics,
        timeUnits: .nanoseconds,
        warmupIterations: Benchmark.defaultConfiguration.warmupIterations,
        scalingFactor: .mega,
        maxDuration: Benchmark.defaultConfiguration.maxDuration,
        maxIterations: Benchmark.defaultConfiguration.maxIterations
    )

    // MARK: Read one field, no scope

    Benchmark("read/habitat", configuration: fastRead) { benchmark in
        blackHole(readHabitat(benchmark.scaledIterations.count))
    }
    Benchmark("read/floor", configuration: fastRead) { benchmark in
        for _ in benchmark.scaledIterations { blackHole(plainGlobal.timeout) }
    }
    Benchmark("read/swift-dependencies") { benchmark in
        blackHole(readDependencies(benchmark.scaledIterations.count))
    }
    Benchmark("read/swinject") { benchmark in
        let container = Container()
        container.register(BenchConfig.self) { _ in BenchConfig() }.inObjectScope(.container)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { blackHole(container.resolve(BenchConfig.self)?.timeout) }
    }

    // MARK: Read one field inside a scope

    Benchmark("scoped-read/habitat") { benchmark in
        stack.withEnvironment({ $0.config.timeout = 1 }) {
            benchmark.startMeasurement()
            blackHole(readHabitat(benchmark.scaledIterations.count))
            benchmark.stopMeasurement()
        }
    }
    Benchmark("scoped-read/swift-dependencies") { benchmark in
        withDependencies { $0.benchConfig.timeout = 1 } operation: {
            benchmark.startMeasurement()
            blackHole(readDependencies(benchmark.scaledIterations.count))
            benchmark.stopMeasurement()
        }
    }

    // MARK: Scope enter + leave, one field changed

    Benchmark("scope/habitat") { benchmark in
        for index in benchmark.scaledIterations {
            stack.withEnvironment({ $0.config.timeout = index }) { blackHole(index) }
        }
    }
    Benchmark("scope/swift-dependencies") { benchmark in
        for index in benchmark.scaledIterations {
            withDependencies { $0.benchConfig.timeout = index } operation: { blackHole(index) }
        }
    }
    Benchmark("scope/swinject") { benchmark in
        let container = Container()
        container.register(BenchConfig.self) { _ in BenchConfig() }.inObjectScope(.container)
        benchmark.startMeasurement()
        for index in benchmark.scaledIterations {
            let child = Container(parent: container)
            child.register(BenchConfig.self) { _ in BenchConfig(timeout: index) }
            blackHole(child)
        }
    }

    // MARK: Push a modified copy + pop

    Benchmark("push-pop/habitat") { benchmark in
        for index in benchmark.scaledIterations {
            stack.push { $0.config.timeout = index }
            stack.pop()
        }
    }
    Benchmark("push-pop/floor") { benchmark in
        var frames = [stack.current]
        frames.reserveCapacity(4)
        benchmark.startMeasurement()
        for index in benchmark.scaledIterations {
            var copy = frames[frames.count - 1]
            copy.config.timeout = index
            frames.append(copy)
            blackHole(frames.removeLast())
        }
    }

    Benchmark("push-pop/locked-floor") { benchmark in
        // The same array behind a mutex: the least any stack that threads share can do.
        var frames = [stack.current]
        frames.reserveCapacity(4)
        let mutex = PlainMutex()
        benchmark.startMeasurement()
        for index in benchmark.scaledIterations {
            mutex.lock()
            var copy = frames[frames.count - 1]
            copy.config.timeout = index
            frames.append(copy)
            mutex.unlock()
            mutex.lock()
            let popped = frames.removeLast()
            mutex.unlock()
            blackHole(popped)
        }
    }

    // MARK: Login then logout

    Benchmark("login-logout/habitat") { benchmark in
        let user = BenchUser(id: 1, name: "Ada")
        let token = AccessToken("t")
        for _ in benchmark.scaledIterations {
            stack.login(user: user, token: token)
            stack.logout()
        }
    }
    Benchmark("login-logout/floor") { benchmark in
        var frames = [stack.current]
        let user = BenchUser(id: 1, name: "Ada")
        let token = AccessToken("t")
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            var loggedIn = frames[frames.count - 1]
            loggedIn.session = Session(user: user, token: token)
            frames[frames.count - 1] = loggedIn
            var loggedOut = frames[frames.count - 1]
            loggedOut.session = nil
            frames[frames.count - 1] = loggedOut
        }
        blackHole(frames)
    }

    // MARK: Two threads reading at once (per read)

    Benchmark("two-threads/habitat", configuration: fastRead) { benchmark in
        let count = benchmark.scaledIterations.count
        let threads = onTwoThreads(perThread: count) { blackHole(readHabitat($0)) }
        benchmark.startMeasurement()
        threads.start()
        threads.wait()
    }
    Benchmark("two-threads/habitat-one-thread", configuration: fastRead) { benchmark in
        blackHole(readHabitat(benchmark.scaledIterations.count))
    }
    Benchmark("two-threads/swift-dependencies") { benchmark in
        let count = benchmark.scaledIterations.count
        let threads = onTwoThreads(perThread: count) { blackHole(readDependencies($0)) }
        benchmark.startMeasurement()
        threads.start()
        threads.wait()
    }

    // MARK: Memory per frame at depth 10,000 (bytes allocated by 10,000 pushes)

    Benchmark(
        "depth/habitat",
        configuration: .init(metrics: [.mallocBytesCount, .mallocCountTotal], scalingFactor: .one, maxIterations: 5)
    ) { benchmark in
        let deep = EnvironmentStack<BenchApp>(stack.current)
        benchmark.startMeasurement()
        for index in 0..<10_000 { deep.push { $0.config.timeout = index } }
        benchmark.stopMeasurement()
        blackHole(deep)
    }

    // MARK: Save and restore a snapshot (user + 50 config keys), JSON file

    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("habitat-bench-\(getpid())")
    let sessions = SessionStore<BenchApp>(
        store: try! JSONFileStore(url: directory.appendingPathComponent("session.json")),
        secrets: try! FileSecretStore(directory: directory.appendingPathComponent("secrets"))
    )
    let snapshotStack = EnvironmentStack<BenchApp>(snapshotEnvironment())
    let plainFile = directory.appendingPathComponent("plain.json")
    let plain = PlainSnapshot(version: 1, user: BenchUser(id: 1, name: "Ada"), config: snapshotEnvironment().config)
    let slow = Benchmark.Configuration(
        metrics: [.wallClock, .instructions, .mallocCountTotal],
        timeUnits: .nanoseconds,
        scalingFactor: .one,
        maxDuration: Benchmark.defaultConfiguration.maxDuration,
        maxIterations: Benchmark.defaultConfiguration.maxIterations
    )

    Benchmark("save/habitat", configuration: slow) { _ in
        try snapshotStack.save(to: sessions)
    }
    Benchmark("save/floor", configuration: slow) { _ in
        try JSONEncoder().encode(plain).write(to: plainFile)
    }
    // Both sides write their file once, here: restoring reads and changes no file, so every
    // iteration reads the same saved snapshot (and none runs right behind a save's flushes).
    try! snapshotStack.save(to: sessions)
    try! JSONEncoder().encode(plain).write(to: plainFile)
    Benchmark("restore/habitat", configuration: slow) { _ in
        blackHole(try snapshotStack.restore(from: sessions))
    }
    Benchmark("restore/floor", configuration: slow) { _ in
        blackHole(try JSONDecoder().decode(PlainSnapshot.self, from: Data(contentsOf: plainFile)))
    }
}
