// Every comparison row: Habitat and what it is compared with, measured in the same run.
//
// Names are "<row>/<side>": summarize.py pairs them into the results table. Each benchmark runs
// `scaledIterations` inner operations per measured iteration, so its per-iteration numbers
// divided by the scaling factor are per operation.
//
// The rule for every row: both sides run the same loop shape and do the same work. Where a side
// has to do more (a durable write, a versioned envelope), the row says so in its label.

import Benchmark
import BenchSupport
import Dependencies
import Foundation
import Habitat
import HabitatPersistence
import Swinject

let stack = EnvironmentStack<BenchApp>(makeEnvironment())

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .mallocCountTotal],
        timeUnits: .nanoseconds,
        warmupIterations: 3,
        scalingFactor: .kilo,
        maxDuration: .seconds(1),
        maxIterations: 1_000
    )
    if let iterations = ProcessInfo.processInfo.environment["HABITAT_BENCH_ITERATIONS"].flatMap(Int.init) {
        // The CI smoke pass: a few iterations of everything, no targets checked.
        Benchmark.defaultConfiguration.maxIterations = iterations
        Benchmark.defaultConfiguration.warmupIterations = 0
        Benchmark.defaultConfiguration.maxDuration = .milliseconds(200)
    }
    var fastRead = Benchmark.defaultConfiguration
    fastRead.scalingFactor = .mega
    var once = Benchmark.defaultConfiguration
    once.scalingFactor = .one

    registerReads(fastRead)
    registerScopes()
    registerWrites()
    registerPersistence(once)
    registerRequests()
}

// MARK: Reads

/// Every read row has one shape: `for _ in iterations { blackHole(<one field>) }`. The black
/// hole is an opaque call, so no side's read can be hoisted out of the loop.
func registerReads(_ fastRead: Benchmark.Configuration) {
    Benchmark("read/habitat", configuration: fastRead) { benchmark in
        for _ in benchmark.scaledIterations { blackHole(stack.current.config.timeout) }
    }
    Benchmark("read/floor", configuration: fastRead) { benchmark in
        for _ in benchmark.scaledIterations { blackHole(plainGlobal.timeout) }
    }
    Benchmark("read/swift-dependencies") { benchmark in
        let reader = DependencyReader()
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { blackHole(reader.config.timeout) }
    }
    Benchmark("read/swinject") { benchmark in
        let container = Container()
        container.register(BenchConfig.self) { _ in BenchConfig() }.inObjectScope(.container)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { blackHole(container.resolve(BenchConfig.self)?.timeout) }
    }

    Benchmark("scoped-read/habitat") { benchmark in
        stack.withEnvironment({ $0.config.timeout = 1 }) {
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations { blackHole(stack.current.config.timeout) }
            benchmark.stopMeasurement()
        }
    }
    Benchmark("scoped-read/swift-dependencies") { benchmark in
        let reader = DependencyReader()
        withDependencies { $0.benchConfig = BenchConfig(timeout: 1) } operation: {
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations { blackHole(reader.config.timeout) }
            benchmark.stopMeasurement()
        }
    }

    // Two threads reading at once, per read (each thread does `scaledIterations` reads).
    Benchmark("two-threads/habitat", configuration: fastRead) { benchmark in
        let threads = onTwoThreads(perThread: benchmark.scaledIterations.count) { count in
            for _ in 0..<count { blackHole(stack.current.config.timeout) }
        }
        benchmark.startMeasurement()
        threads.start()
        threads.wait()
    }
    Benchmark("two-threads/habitat-one-thread", configuration: fastRead) { benchmark in
        for _ in 0..<benchmark.scaledIterations.count { blackHole(stack.current.config.timeout) }
    }
    Benchmark("two-threads/swift-dependencies") { benchmark in
        let threads = onTwoThreads(perThread: benchmark.scaledIterations.count) { count in
            let reader = DependencyReader()
            for _ in 0..<count { blackHole(reader.config.timeout) }
        }
        benchmark.startMeasurement()
        threads.start()
        threads.wait()
    }
}

// MARK: Scopes

/// Every scope row: one field set on the way in, one read of it inside, then leave.
func registerScopes() {
    Benchmark("scope/habitat") { benchmark in
        for index in benchmark.scaledIterations {
            stack.withEnvironment({ $0.config.timeout = index }) { blackHole(stack.current.config.timeout) }
        }
    }
    Benchmark("scope/swift-dependencies") { benchmark in
        let reader = DependencyReader()
        benchmark.startMeasurement()
        for index in benchmark.scaledIterations {
            withDependencies { $0.benchConfig = BenchConfig(timeout: index) } operation: {
                blackHole(reader.config.timeout)
            }
        }
    }
    Benchmark("scope/swift-dependencies-get-set") { benchmark in
        // `$0.benchConfig.timeout = index` reads the dependency before setting it: more work
        // than Habitat's row, so it is an extra row, not the comparison.
        let reader = DependencyReader()
        benchmark.startMeasurement()
        for index in benchmark.scaledIterations {
            withDependencies { $0.benchConfig.timeout = index } operation: { blackHole(reader.config.timeout) }
        }
    }
    Benchmark("scope/tasklocal-box") { benchmark in
        // The floor of any task-scoped override: bind a prebuilt class box, read one field.
        let box = EnvironmentBox(stack.current)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            BareTaskLocal.$box.withValue(box) { blackHole(BareTaskLocal.box.environment.config.timeout) }
        }
    }
    Benchmark("scope/tasklocal-copy-box") { benchmark in
        // The same work as Habitat's scope, done by hand: copy the environment, change one field,
        // box it, bind it, read the field.
        for index in benchmark.scaledIterations {
            var environment = BareTaskLocal.box.environment
            environment.config.timeout = index
            BareTaskLocal.$box.withValue(EnvironmentBox(environment)) {
                blackHole(BareTaskLocal.box.environment.config.timeout)
            }
        }
    }
    Benchmark("scope/swinject") { benchmark in
        let container = Container()
        container.register(BenchConfig.self) { _ in BenchConfig() }.inObjectScope(.container)
        benchmark.startMeasurement()
        for index in benchmark.scaledIterations {
            let child = Container(parent: container)
            child.register(BenchConfig.self) { _ in BenchConfig(timeout: index) }
            blackHole(child.resolve(BenchConfig.self)?.timeout)
        }
    }

    // Three scopes nested, one field set in each, one read in the innermost.
    Benchmark("nested-scopes/habitat") { benchmark in
        for index in benchmark.scaledIterations {
            stack.withEnvironment({ $0.config.timeout = index }) {
                stack.withEnvironment({ $0.config.timeout = index + 1 }) {
                    stack.withEnvironment({ $0.config.timeout = index + 2 }) {
                        blackHole(stack.current.config.timeout)
                    }
                }
            }
        }
    }
    Benchmark("nested-scopes/swift-dependencies") { benchmark in
        let reader = DependencyReader()
        benchmark.startMeasurement()
        for index in benchmark.scaledIterations {
            withDependencies { $0.benchConfig = BenchConfig(timeout: index) } operation: {
                withDependencies { $0.benchConfig = BenchConfig(timeout: index + 1) } operation: {
                    withDependencies { $0.benchConfig = BenchConfig(timeout: index + 2) } operation: {
                        blackHole(reader.config.timeout)
                    }
                }
            }
        }
    }
    Benchmark("nested-scopes/tasklocal-copy-box") { benchmark in
        for index in benchmark.scaledIterations {
            withCopiedBox(timeout: index) {
                withCopiedBox(timeout: index + 1) {
                    withCopiedBox(timeout: index + 2) { blackHole(BareTaskLocal.box.environment.config.timeout) }
                }
            }
        }
    }

    // An async scope with a suspension inside: enter, yield the thread, read, leave.
    Benchmark("async-scope/habitat") { benchmark in
        for index in benchmark.scaledIterations {
            await stack.withEnvironment({ $0.config.timeout = index }) {
                await Task.yield()
                blackHole(stack.current.config.timeout)
            }
        }
    }
    Benchmark("async-scope/swift-dependencies") { benchmark in
        let reader = DependencyReader()
        benchmark.startMeasurement()
        for index in benchmark.scaledIterations {
            await withDependencies { $0.benchConfig = BenchConfig(timeout: index) } operation: {
                await Task.yield()
                blackHole(reader.config.timeout)
            }
        }
    }
    Benchmark("async-scope/tasklocal-copy-box") { benchmark in
        for index in benchmark.scaledIterations {
            var environment = BareTaskLocal.box.environment
            environment.config.timeout = index
            await BareTaskLocal.$box.withValue(EnvironmentBox(environment)) {
                await Task.yield()
                blackHole(BareTaskLocal.box.environment.config.timeout)
            }
        }
    }
}

@inline(__always)
func withCopiedBox(timeout: Int, _ body: () -> Void) {
    var environment = BareTaskLocal.box.environment
    environment.config.timeout = timeout
    BareTaskLocal.$box.withValue(EnvironmentBox(environment), operation: body)
}

// MARK: Writes

func registerWrites() {
    // Push a copy with one field changed, then pop it and hand it to the black hole.
    Benchmark("push-pop/habitat") { benchmark in
        for index in benchmark.scaledIterations {
            stack.push { $0.config.timeout = index }
            blackHole(stack.pop())
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
        let locked = LockedArrayStack(stack.current)
        benchmark.startMeasurement()
        for index in benchmark.scaledIterations {
            locked.push(timeout: index)
            blackHole(locked.pop())
        }
    }

    // Log in, then log out: two changes of the session field of the top environment.
    Benchmark("login-logout/habitat") { benchmark in
        let token = AuthToken("t")
        for _ in benchmark.scaledIterations {
            stack.login(user: benchUser, token: token)
            stack.logout()
        }
    }
    Benchmark("login-logout/floor") { benchmark in
        // The same two changes by hand, in place, on a mutex-guarded array (the cheapest correct
        // way for a stack that threads share).
        let locked = LockedArrayStack(stack.current)
        let token = AuthToken("t")
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            locked.replaceSession(UserSession(user: benchUser, token: token))
            locked.replaceSession(nil)
        }
        blackHole(locked)
    }

    // The same two changes with autosave on, to a JSON file and a secret file on disk: a change
    // only asks the background saver for a save, so the caller pays for no file I/O (the saver
    // coalesces the changes made while it writes).
    let autosaveDirectory = benchDirectory("autosave")
    let autosaved = SessionStore<BenchApp>(
        store: try! JSONFileStore(url: autosaveDirectory.appendingPathComponent("session.json")),
        secrets: try! FileSecretStore(directory: autosaveDirectory.appendingPathComponent("secrets"))
    )
    Benchmark("login-logout/habitat-autosave") { benchmark in
        let saving = EnvironmentStack<BenchApp>(stack.current)
        saving.enableAutosave(to: autosaved)
        let token = AuthToken("t")
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            saving.login(user: benchUser, token: token)
            saving.logout()
        }
        benchmark.stopMeasurement()
        saving.disableAutosave()
    }

    // Memory per frame at depth 10,000 (bytes allocated by 10,000 pushes).
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
}

// MARK: Save and restore a snapshot (user + N config keys) in JSON files

func registerPersistence(_ once: Benchmark.Configuration) {
    let directory = benchDirectory("snapshots")
    for keys in [10, 50, 1_000] {
        let place = directory.appendingPathComponent("\(keys)")
        let sessions = SessionStore<BenchApp>(
            store: try! JSONFileStore(url: place.appendingPathComponent("session.json")),
            secrets: try! FileSecretStore(directory: place.appendingPathComponent("secrets"))
        )
        let environment = makeEnvironment(configKeys: keys).with(\.session, UserSession(user: benchUser, token: AuthToken("bench-token")))
        let snapshotStack = EnvironmentStack<BenchApp>(environment)
        let plainFile = place.appendingPathComponent("plain.json").path
        let plainToken = place.appendingPathComponent("secrets/plain.token").path
        let plain = PlainSnapshot(version: 1, user: benchUser, config: environment.config)

        if keys == 50 {
            Benchmark("save/habitat", configuration: once) { _ in
                try snapshotStack.save(to: sessions)
            }
            Benchmark("save/floor-durable", configuration: once) { _ in
                // The same work as Habitat's save of a session whose token is unchanged: the
                // stored token read and compared (so not rewritten), the snapshot written to a
                // temporary file, fsynced, renamed into place and its directory fsynced.
                let token = Data("bench-token".utf8)
                if try Data(contentsOf: URL(fileURLWithPath: plainToken)) != token {
                    try durableWrite(token, to: plainToken)
                }
                try durableWrite(JSONEncoder().encode(plain), to: plainFile)
            }
            // A save that changes the token (a login, an account switch, a refresh). Habitat
            // writes the token record with the previous token kept, the snapshot, then the record
            // without it: three durable writes, so that a crash never pairs a user with another
            // save's token. The floor writes the token and the snapshot: two.
            let switching = [environment, environment.with(\.session, UserSession(user: benchUser, token: AuthToken("other-token")))]
            // NB: one save per measured iteration, so the alternation lives outside the loop.
            let habitatSaves = Counter()
            Benchmark("save-new-token/habitat", configuration: once) { _ in
                try sessions.save(switching[habitatSaves.next() % 2])
            }
            let floorSaves = Counter()
            Benchmark("save-new-token/floor", configuration: once) { _ in
                let token = floorSaves.next() % 2 == 0 ? "bench-token" : "other-token"
                try durableWrite(Data(token.utf8), to: plainToken)
                try durableWrite(JSONEncoder().encode(plain), to: plainFile)
            }
            Benchmark("save/floor-plain", configuration: once) { _ in
                try JSONEncoder().encode(plain).write(to: URL(fileURLWithPath: plainFile))
            }
        }
        // Both sides write their files once, here: restoring reads and changes no file.
        try! snapshotStack.save(to: sessions)
        try! durableWrite(JSONEncoder().encode(plain), to: plainFile)
        try! durableWrite(Data("bench-token".utf8), to: plainToken)
        Benchmark("restore-\(keys)/habitat", configuration: once) { _ in
            blackHole(try snapshotStack.restore(from: sessions))
        }
        Benchmark("restore-\(keys)/floor", configuration: once) { _ in
            // The same two files read: the snapshot decoded, the token read.
            let snapshot = try JSONDecoder().decode(PlainSnapshot.self, from: Data(contentsOf: URL(fileURLWithPath: plainFile)))
            let token = try Data(contentsOf: URL(fileURLWithPath: plainToken))
            blackHole((snapshot, token))
        }
    }
}

/// Counts calls, for benchmarks that alternate between two inputs across iterations.
// Safe: `value` is only touched with `lock` held.
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0
    func next() -> Int { lock.withLock { value += 1; return value } }
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

// MARK: Per request (the server example's work, without the network)

/// A server request's binding: set the user, token and start time for the request, read the
/// three once each, unbind. Each side does it its own way; the values are the same.
func registerRequests() {
    Benchmark("request/floor") { benchmark in
        for index in benchmark.scaledIterations {
            let (user, token) = requestUsers[index % 1_000]
            handleRequest(RequestState(user: user, token: token, started: Date(timeIntervalSince1970: Double(index))))
        }
    }
    Benchmark("request/tasklocal") { benchmark in
        for index in benchmark.scaledIterations {
            let (user, token) = requestUsers[index % 1_000]
            RequestLocal.$state.withValue(RequestState(user: user, token: token, started: Date(timeIntervalSince1970: Double(index)))) {
                sink(RequestLocal.state?.user.id ?? 0)
                sink(RequestLocal.state?.token.utf8.count ?? 0)
                sink(Int(RequestLocal.state?.started.timeIntervalSince1970 ?? 0))
            }
        }
    }
    Benchmark("request/swift-dependencies") { benchmark in
        let reader = RequestDependencyReader()
        benchmark.startMeasurement()
        for index in benchmark.scaledIterations {
            let (user, token) = requestUsers[index % 1_000]
            let state = RequestState(user: user, token: token, started: Date(timeIntervalSince1970: Double(index)))
            withDependencies { $0.benchRequest = state } operation: {
                sink(reader.request?.user.id ?? 0)
                sink(reader.request?.token.utf8.count ?? 0)
                sink(Int(reader.request?.started.timeIntervalSince1970 ?? 0))
            }
        }
    }
    Benchmark("request/habitat") { benchmark in
        // The server example's middleware: the scope's change signs the member in, in place,
        // and sets the request's clock.
        for index in benchmark.scaledIterations {
            let (user, token) = requestUsers[index % 1_000]
            let started = Date(timeIntervalSince1970: Double(index))
            stack.withEnvironment({
                $0.session = UserSession(user: user, token: AuthToken(token))
                $0.now = { started }
            }) {
                sink(stack.current.currentUser?.id ?? 0)
                sink(stack.current.session?.token.secret.utf8.count ?? 0)
                sink(Int(stack.current.now().timeIntervalSince1970))
            }
        }
    }
}
