import Foundation
import HabitatPostgres
import HabitatSessions
import Logging
import PostgresNIO

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
func withPostgres<R: Sendable>(
    url: String,
    timeout: Duration = .seconds(5),
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
// Safe: `count` is read and written only with `lock` held.
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0

    func increment() { lock.withLock { count += 1 } }
    var value: Int { lock.withLock { count } }
}
