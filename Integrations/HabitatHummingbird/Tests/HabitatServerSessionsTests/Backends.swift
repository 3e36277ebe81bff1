import Foundation
import HabitatPostgres
import HabitatServerSessions
import Logging
import PostgresNIO
import Testing

/// The backends every contract test runs on: memory always; PostgreSQL when
/// `HABITAT_POSTGRES_URL` names a database (the server example's `fleet.sh` sets it, on a
/// throwaway cluster it starts).
enum Backend: String, CaseIterable, Sendable {
    case memory
    case postgres

    static var available: [Backend] {
        ProcessInfo.processInfo.environment["HABITAT_POSTGRES_URL"] == nil ? [.memory] : [.memory, .postgres]
    }

    /// Runs `body` with a new backend of this kind; a PostgreSQL one gets a running client and
    /// its tables.
    func with<R: Sendable>(_ body: (any SessionBackend) async throws -> R) async throws -> R {
        switch self {
        case .memory:
            return try await body(MemorySessionBackend())
        case .postgres:
            let url = ProcessInfo.processInfo.environment["HABITAT_POSTGRES_URL"]!
            return try await withPostgres(url: url) { backend in
                try await backend.migrate()
                return try await body(backend)
            }
        }
    }
}


/// Runs `body` with a backend on a running client of the database at `url`.
///
/// NB: 30 s by default: under the thread sanitizer on two shared cores, twenty callers queued on
/// the pool waited past 5 s once (CI); the tests that check the timeout itself pass their own.
func withPostgres<R: Sendable>(
    url: String,
    timeout: Duration = .seconds(30),
    _ body: (PostgresSessionBackend) async throws -> R
) async throws -> R {
    var configuration = try PostgresSessionBackend.configuration(url: url)
    configuration.options.connectTimeout = timeout
    let client = PostgresClient(configuration: configuration)
    return try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { await client.run() }
        defer { group.cancelAll() }
        return try await body(PostgresSessionBackend(client: client, timeout: timeout))
    }
}

/// A session's value in the tests: a counter, and an upstream token that can expire.
struct Visits: Codable, Sendable, Equatable {
    var member: Int
    var count = 0
    var upstream = "stale"
}

/// A count several tasks add to.
final class Counter: Sendable {
    private let count = LockedBox(0)

    func increment() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}

/// A backend that hands every call to `base`: the tests' probes conform, and change only what
/// they watch.
protocol ForwardingBackend: SessionBackend {
    var base: any SessionBackend { get }
}

extension ForwardingBackend {
    func create(id: String, data: Data, expiresIn: Duration) async throws(SessionBackendError) -> StoredSession {
        try await base.create(id: id, data: data, expiresIn: expiresIn)
    }
    func get(id: String) async throws(SessionBackendError) -> StoredSession? { try await base.get(id: id) }
    func set(id: String, data: Data, expiresIn: Duration, expectedVersion: Int64) async throws(SessionBackendError) -> StoredSession {
        try await base.set(id: id, data: data, expiresIn: expiresIn, expectedVersion: expectedVersion)
    }
    func remove(id: String) async throws(SessionBackendError) { try await base.remove(id: id) }
    func set(id: String, data: Data, expiresIn: Duration, expectedVersion: Int64, fencedBy claim: LeaseClaim) async throws(SessionBackendError) -> StoredSession {
        try await base.set(id: id, data: data, expiresIn: expiresIn, expectedVersion: expectedVersion, fencedBy: claim)
    }
    func remove(id: String, fencedBy claim: LeaseClaim) async throws(SessionBackendError) { try await base.remove(id: id, fencedBy: claim) }
    func acquireLease(_ name: String, holder: String, duration: Duration) async throws(SessionBackendError) -> Bool {
        try await base.acquireLease(name, holder: holder, duration: duration)
    }
    func takeLease(_ name: String, holder: String, duration: Duration) async throws(SessionBackendError) -> LeaseTake {
        try await base.takeLease(name, holder: holder, duration: duration)
    }
    func releaseLease(_ name: String, holder: String) async throws(SessionBackendError) {
        try await base.releaseLease(name, holder: holder)
    }
    func purgeExpired() async throws(SessionBackendError) -> Int { try await base.purgeExpired() }
    func recordAttempt(_ key: String, limit: Int, within window: Duration) async throws(SessionBackendError) -> Bool {
        try await base.recordAttempt(key, limit: limit, within: window)
    }
    func forgetAttempts(_ key: String) async throws(SessionBackendError) { try await base.forgetAttempts(key) }
    func recordSession(_ id: String, owner: String, limit: Int) async throws(SessionBackendError) -> [String] {
        try await base.recordSession(id, owner: owner, limit: limit)
    }
}

/// A memory backend that counts its purges and fails every second one (the database away).
struct PurgeProbe: ForwardingBackend {
    let base: any SessionBackend = MemorySessionBackend()
    let purges = Counter()

    func purgeExpired() async throws(SessionBackendError) -> Int {
        purges.increment()
        if purges.value.isMultiple(of: 2) { throw .unavailable("the probe's every second purge") }
        return try await base.purgeExpired()
    }
}

/// How many rows of `table` have `column` = `value`, expired or not, in a PostgreSQL backend.
func storedRows(_ backend: any SessionBackend, _ table: String, _ column: String, _ value: String) async throws -> Int64 {
    let client = try #require(backend as? PostgresSessionBackend).client
    let rows = try await client.query(PostgresQuery(unsafeSQL: "SELECT count(*) FROM \(table) WHERE \(column) = $1", binds: {
        var binds = PostgresBindings()
        binds.append(value)
        return binds
    }()))
    for try await row in rows { return try row.decode(Int64.self) }
    return 0
}
