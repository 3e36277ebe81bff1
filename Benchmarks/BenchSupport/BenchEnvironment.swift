// The environment every benchmark reads, and the floors it is measured against: shared by the
// harness (`HabitatBenchmarks`), the growth runner (`habitat-growth`) and the instruction
// probe, so all three measure the same types.

public import Dependencies
public import Foundation
public import Habitat

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// MARK: The app being measured

/// `Identifiable`, so the several-accounts rows tell two users apart by `id`.
public struct BenchUser: Codable, Sendable, Identifiable {
    public var id: Int
    public var name: String
    public init(id: Int, name: String) { self.id = id; self.name = name }
}

public struct BenchConfig: Codable, Sendable {
    public var timeout = 30
    public var flags: [String: String] = [:]
    public init(timeout: Int = 30, flags: [String: String] = [:]) { self.timeout = timeout; self.flags = flags }
}

public struct BenchServices: Sendable {
    public var api = "live"
    public var analytics = "live"
    public init() {}
}

public enum BenchApp: EnvironmentSchema {
    public typealias Services = BenchServices
    public typealias User = BenchUser
    public typealias Config = BenchConfig
}

public let benchUser = BenchUser(id: 1, name: "Ada")
/// The second account of the switch rows.
public let benchSecondUser = BenchUser(id: 2, name: "Grace")

public func makeEnvironment(configKeys: Int = 0) -> HabitatEnvironment<BenchApp> {
    var config = BenchConfig()
    for index in 0..<configKeys { config.flags["flag-\(index)"] = "value-\(index)" }
    return HabitatEnvironment(services: BenchServices(), config: config)
}

// MARK: Floors

/// The read floor: a field of a plain global struct.
public struct PlainEnvironment: Sendable {
    public var timeout = 30
}
nonisolated(unsafe) public var plainGlobal = PlainEnvironment()

/// The scope floor: the environment in a final-class box bound to a bare `TaskLocal`.
public final class EnvironmentBox: Sendable {
    public let environment: HabitatEnvironment<BenchApp>
    public init(_ environment: HabitatEnvironment<BenchApp>) { self.environment = environment }
}
public enum BareTaskLocal {
    @TaskLocal public static var box = EnvironmentBox(makeEnvironment())
}

/// A plain pthread mutex, for the floor of a stack that threads share.
// Safe: the mutex itself is only used through pthread_mutex_lock/unlock, which synchronise.
public final class PlainMutex: @unchecked Sendable {
    let mutex: UnsafeMutablePointer<pthread_mutex_t>
    public init() {
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
    }
    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }
    @inline(__always) public func lock() { pthread_mutex_lock(mutex) }
    @inline(__always) public func unlock() { pthread_mutex_unlock(mutex) }
}

/// The floor of a stack that threads share: an array of environments behind a mutex, changed
/// in place, the cheapest correct way.
// Safe: `frames` is only touched with `mutex` held (callers go through the methods).
public final class LockedArrayStack: @unchecked Sendable {
    public let mutex = PlainMutex()
    public var frames: [HabitatEnvironment<BenchApp>]
    public init(_ base: HabitatEnvironment<BenchApp>) {
        frames = [base]
        frames.reserveCapacity(8)
    }
    @inline(__always) public func readTimeout() -> Int {
        mutex.lock()
        defer { mutex.unlock() }
        return frames[frames.count - 1].config.timeout
    }
    @inline(__always) public func push(timeout: Int) {
        mutex.lock()
        var copy = frames[frames.count - 1]
        copy.config.timeout = timeout
        frames.append(copy)
        mutex.unlock()
    }
    @inline(__always) @discardableResult public func pop() -> HabitatEnvironment<BenchApp>? {
        mutex.lock()
        let popped = frames.count > 1 ? frames.removeLast() : nil
        mutex.unlock()
        return popped
    }
    /// What login (a session) and logout (`nil`) change, in place on the top frame.
    @inline(__always) public func replaceSession(_ session: UserSession<BenchUser>?) {
        mutex.lock()
        frames[frames.count - 1].session = session
        mutex.unlock()
    }
}

// MARK: swift-dependencies: the same configuration as a dependency

private enum BenchConfigKey: DependencyKey {
    static let liveValue = BenchConfig()
}
extension DependencyValues {
    public var benchConfig: BenchConfig {
        get { self[BenchConfigKey.self] }
        set { self[BenchConfigKey.self] = newValue }
    }
}
public struct DependencyReader: Sendable {
    @Dependency(\.benchConfig) public var config
    public init() {}
}

// MARK: Snapshots

/// What the persistence floors encode: the same user and configuration, plainly.
public struct PlainSnapshot: Codable, Sendable {
    public var version: Int
    public var user: BenchUser
    public var config: BenchConfig
    public init(version: Int, user: BenchUser, config: BenchConfig) {
        self.version = version
        self.user = user
        self.config = config
    }
}

/// The durable-write floor: what any crash-safe save has to do, with nothing on top. A temporary
/// file in the same directory, written and fsynced, renamed over the old file, and the directory
/// fsynced.
public func durableWrite(_ data: Data, to path: String) throws {
    let directory = (path as NSString).deletingLastPathComponent
    let temporary = path + ".tmp"
    let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    guard fd >= 0 else { throw POSIXError(.EIO) }
    let written = data.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    guard written == data.count, fsync(fd) == 0 else { close(fd); throw POSIXError(.EIO) }
    close(fd)
    guard rename(temporary, path) == 0 else { throw POSIXError(.EIO) }
    let directoryFD = open(directory, O_RDONLY | O_CLOEXEC)
    guard directoryFD >= 0 else { throw POSIXError(.EIO) }
    fsync(directoryFD)
    close(directoryFD)
}

/// A fresh directory for one benchmark's files.
public func benchDirectory(_ name: String) -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("habitat-bench-\(getpid())-\(name)")
    try? FileManager.default.removeItem(at: url)
    try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// Hands a value to code the optimiser can't see into, so the work that made it is not removed
/// (the growth runner's and the probe's `blackHole`).
@inline(never)
public func sink<T>(_ value: T) {
    withExtendedLifetime(value) {}
}

/// The same for an `Int`, without the generic call's cost, so that a read of one field is
/// measured with as little around it as the floor has.
///
/// NB: the branch that can print is what keeps the calls: an empty body, visible to the caller
/// through cross-module optimisation, let the optimiser drop the floor's loop altogether.
@inline(never)
public func sink(_ value: Int) {
    if value == .min { print(value) }
}

// MARK: A server request's values (the "per request" rows)

/// What a server binds per request: the signed-in user, the bearer token and the request's start.
public struct RequestState: Sendable {
    public var user: BenchUser
    public var token: String
    public var started: Date

    public init(user: BenchUser, token: String, started: Date) {
        self.user = user
        self.token = token
        self.started = started
    }
}

/// The bare task-local variant: one `@TaskLocal` holding the request's values.
public enum RequestLocal {
    @TaskLocal public static var state: RequestState?
}

private enum RequestStateKey: DependencyKey {
    static let liveValue: RequestState? = nil
}

extension DependencyValues {
    public var benchRequest: RequestState? {
        get { self[RequestStateKey.self] }
        set { self[RequestStateKey.self] = newValue }
    }
}

/// Reads the request's values through `@Dependency`.
public struct RequestDependencyReader: Sendable {
    @Dependency(\.benchRequest) public var request
    public init() {}
}

/// 1,000 users and their tokens, as a server's requests would bring them.
public let requestUsers: [(BenchUser, String)] = (1...1_000).map { (BenchUser(id: $0, name: "member-\($0)"), "tok-\($0)") }

/// The floor's handler: the values arrive as a parameter (a field of Hummingbird's context).
@inline(never)
public func handleRequest(_ state: RequestState) {
    sink(state.user.id)
    sink(state.token.utf8.count)
    sink(Int(state.started.timeIntervalSince1970))
}
