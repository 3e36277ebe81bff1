public import Foundation
public import HabitatServerSessions
public import Logging
public import PostgresNIO

/// A ``SessionBackend`` on PostgreSQL: the sessions of a fleet of server instances, in the
/// database they already share.
///
/// Two tables (``migrate()`` creates them): `habitat_sessions` (id, data, version, expires) and
/// `habitat_leases` (name, holder, deadline), two for limits across instances
/// (`habitat_attempts`, `habitat_owned_sessions`), and a trigger that tells every committed change
/// of a session on the channel `habitat_sessions` (``PostgresSessionChanges`` listens to it). Through `ServerSessions`, a session's `id` column
/// holds the SHA-256 of its ID (`StoredSession.key(for:)`), never the ID itself. Each operation
/// is one statement or one short transaction, and holds no lock past itself:
///
/// - a versioned write is `UPDATE … WHERE id = $1 AND version = $2`: of two writers that read
///   one version, the database lets exactly one through, and the other gets
///   ``SessionBackendError/versionConflict(id:expected:current:)``;
/// - a lease is taken in a short transaction (an advisory lock on its name, its row locked,
///   then an upsert): only when free or lapsed, so a crashed holder's lease ends at its
///   deadline, with no lock held while the holder calls an upstream server;
/// - expiries and deadlines are counted on the database's clock (`now()`; a lease's deadline by
///   `clock_timestamp()`, the clock at the check, so a statement that waited on a lock can't
///   pass a lease that lapsed meanwhile), the one clock every instance shares.
///
/// Any failure to reach the database is ``SessionBackendError/unavailable(_:)``: a server
/// answers 503 and serves no member it can't confirm.
///
/// The `client` must be running (`client.run()`, or a Hummingbird `Application`'s services).
public struct PostgresSessionBackend: SessionBackend {
    /// The connection pool the backend queries through.
    public let client: PostgresClient
    /// How long an operation may wait for the database before it is
    /// ``SessionBackendError/unavailable(_:)``.
    public let timeout: Duration
    let logger: Logger

    /// - Parameters:
    ///   - client: A running PostgreSQL client.
    ///   - timeout: How long an operation may wait for the database, a connection included.
    ///     NB: while the database is down, the client's pool keeps trying to connect and a
    ///     query waits for a connection; the timeout is what turns that wait into a 503.
    ///   - logger: Where the queries log (at debug level and below).
    public init(client: PostgresClient, timeout: Duration = .seconds(5), logger: Logger = Logger(label: "habitat.sessions.postgres")) {
        self.client = client
        self.timeout = timeout
        self.logger = logger
    }

    /// Creates the backend's two tables if they don't exist yet. Instances may call it at once:
    /// it takes a transaction-scoped advisory lock first (concurrent `CREATE TABLE IF NOT
    /// EXISTS` statements can otherwise fail on PostgreSQL's catalog).
    public func migrate() async throws(SessionBackendError) {
        try await run {
            try await client.query(
                """
                DO $$ BEGIN
                    PERFORM pg_advisory_xact_lock(hashtext('habitat_sessions'));
                    CREATE TABLE IF NOT EXISTS habitat_sessions (
                        id text PRIMARY KEY, data bytea NOT NULL, version bigint NOT NULL, expires timestamptz NOT NULL
                    );
                    CREATE TABLE IF NOT EXISTS habitat_leases (name text PRIMARY KEY, holder text NOT NULL, deadline timestamptz NOT NULL);
                    -- Attempts (sign-ins per name) and the sessions each owner holds, for limits
                    -- that hold across instances.
                    CREATE TABLE IF NOT EXISTS habitat_attempts (key text NOT NULL, at timestamptz NOT NULL);
                    CREATE INDEX IF NOT EXISTS habitat_attempts_key ON habitat_attempts (key, at);
                    CREATE TABLE IF NOT EXISTS habitat_owned_sessions (
                        id text PRIMARY KEY, owner text NOT NULL, at timestamptz NOT NULL
                    );
                    CREATE INDEX IF NOT EXISTS habitat_owned_sessions_owner ON habitat_owned_sessions (owner, at);
                    -- The change feed (PostgresSessionChanges): every committed write or removal,
                    -- whoever made it, as "<id> <version>" or "<id> -".
                    CREATE OR REPLACE FUNCTION habitat_sessions_notify() RETURNS trigger LANGUAGE plpgsql AS $f$
                    BEGIN
                        IF TG_OP = 'DELETE' THEN
                            PERFORM pg_notify('habitat_sessions', OLD.id || ' -');
                        ELSE
                            PERFORM pg_notify('habitat_sessions', NEW.id || ' ' || NEW.version);
                        END IF;
                        RETURN NULL;
                    END $f$;
                    -- A session gone (removed, signed out, purged) is no longer one its owner holds.
                    CREATE OR REPLACE FUNCTION habitat_sessions_disown() RETURNS trigger LANGUAGE plpgsql AS $f$
                    BEGIN
                        DELETE FROM habitat_owned_sessions WHERE id = OLD.id;
                        RETURN NULL;
                    END $f$;
                    IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgname = 'habitat_sessions_disowned') THEN
                        CREATE TRIGGER habitat_sessions_disowned AFTER DELETE ON habitat_sessions
                            FOR EACH ROW EXECUTE FUNCTION habitat_sessions_disown();
                    END IF;
                    IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgname = 'habitat_sessions_changed') THEN
                        CREATE TRIGGER habitat_sessions_changed AFTER INSERT OR UPDATE OR DELETE ON habitat_sessions
                            FOR EACH ROW EXECUTE FUNCTION habitat_sessions_notify();
                    END IF;
                END $$
                """, logger: logger)
        }
    }

    /// Deletes expired sessions, and lapsed leases but those of a session's refresh whose session
    /// is still there (such a lease marks a refresh token that may be spent: see
    /// `ServerSessions.refresh`); returns how many sessions went. Expired sessions are invisible
    /// anyway: this only reclaims their space.
    @discardableResult
    public func purgeExpired() async throws(SessionBackendError) -> Int {
        try await run {
            try await client.query(
                """
                DELETE FROM habitat_leases l WHERE deadline <= clock_timestamp()
                  AND NOT EXISTS (SELECT 1 FROM habitat_sessions s WHERE l.name = 'refresh:' || s.id)
                """, logger: logger
            )
            var count = 0
            for try await _ in try await client.query("DELETE FROM habitat_sessions WHERE expires <= now() RETURNING id", logger: logger) {
                count += 1
            }
            return count
        }
    }

    public func recordAttempt(_ key: String, limit: Int, within window: Duration) async throws(SessionBackendError) -> Bool {
        // NB: one transaction under an advisory lock on the key: the count and the insert are
        // one step for every instance, so concurrent attempts can't pass the limit together.
        let seconds = window.seconds
        return try await inTransaction(lockingKey: "attempts:" + key) { connection, logger in
            try await connection.query(
                "DELETE FROM habitat_attempts WHERE key = \(key) AND at <= clock_timestamp() - make_interval(secs => \(seconds))",
                logger: logger
            )
            let recorded = try await connection.query(
                """
                INSERT INTO habitat_attempts (key, at)
                SELECT \(key), clock_timestamp() WHERE (SELECT count(*) FROM habitat_attempts WHERE key = \(key)) < \(Int64(limit))
                RETURNING 1
                """, logger: logger
            ).first(decoding: Int32.self)
            return recorded != nil
        }
    }

    public func forgetAttempts(_ key: String) async throws(SessionBackendError) {
        try await run { try await client.query("DELETE FROM habitat_attempts WHERE key = \(key)", logger: logger) }
    }

    public func recordSession(_ id: String, owner: String, limit: Int) async throws(SessionBackendError) -> [String] {
        try await inTransaction(lockingKey: "owner:" + owner) { connection, logger in
            try await connection.query(
                """
                INSERT INTO habitat_owned_sessions (id, owner, at) VALUES (\(id), \(owner), clock_timestamp())
                ON CONFLICT (id) DO UPDATE SET owner = EXCLUDED.owner, at = EXCLUDED.at
                """, logger: logger
            )
            var ended: [String] = []
            let rows = try await connection.query(
                """
                DELETE FROM habitat_owned_sessions WHERE id IN (
                    SELECT id FROM habitat_owned_sessions WHERE owner = \(owner) ORDER BY at DESC, id OFFSET \(Int64(limit))
                ) RETURNING id
                """, logger: logger
            )
            for try await id in rows.decode(String.self) { ended.append(id) }
            return ended
        }
    }

    /// Runs `body` in a transaction that holds an advisory lock on `key` (released at its end).
    private func inTransaction<R: Sendable>(
        lockingKey key: String,
        _ body: @escaping @Sendable (PostgresConnection, Logger) async throws -> R
    ) async throws(SessionBackendError) -> R {
        try await run { [logger] in
            try await client.withConnection { connection in
                _ = try await connection.query("BEGIN", logger: logger)
                do {
                    _ = try await connection.query("SELECT pg_advisory_xact_lock(hashtext(\(key)))", logger: logger)
                    let result = try await body(connection, logger)
                    _ = try await connection.query("COMMIT", logger: logger)
                    return result
                } catch {
                    _ = try? await connection.query("ROLLBACK", logger: logger)
                    throw error
                }
            }
        }
    }

    public func create(id: String, data: Data, expiresIn: Duration) async throws(SessionBackendError) -> StoredSession {
        let created = try await run {
            try await client.query(
                """
                INSERT INTO habitat_sessions (id, data, version, expires)
                VALUES (\(id), \(data), 1, now() + make_interval(secs => \(expiresIn.seconds)))
                ON CONFLICT (id) DO UPDATE SET data = EXCLUDED.data, version = 1, expires = EXCLUDED.expires
                WHERE habitat_sessions.expires <= now()
                RETURNING version
                """, logger: logger
            ).first(decoding: Int64.self)
        }
        guard created != nil else { throw .duplicateID(id) }
        return StoredSession(id: id, data: data, version: 1)
    }

    public func get(id: String) async throws(SessionBackendError) -> StoredSession? {
        let row = try await run {
            try await client.query(
                "SELECT data, version, \(unescaped: Self.remaining) FROM habitat_sessions WHERE id = \(id) AND expires > now()",
                logger: logger
            ).first(decoding: (Data, Int64, Double).self)
        }
        return row.map { StoredSession(id: id, data: $0.0, version: $0.1, expiresIn: .remaining($0.2)) }
    }

    public func get(ids: [String]) async throws(SessionBackendError) -> [String: StoredSession] {
        try await run {
            let rows = try await client.query(
                """
                SELECT id, data, version, \(unescaped: Self.remaining) FROM habitat_sessions
                WHERE id = ANY(\(ids)) AND expires > now()
                """,
                logger: logger
            )
            var sessions: [String: StoredSession] = [:]
            for try await (id, data, version, seconds) in rows.decode((String, Data, Int64, Double).self) {
                sessions[id] = StoredSession(id: id, data: data, version: version, expiresIn: .remaining(seconds))
            }
            return sessions
        }
    }

    public func set(id: String, data: Data, expiresIn: Duration, expectedVersion: Int64) async throws(SessionBackendError) -> StoredSession {
        let version = try await run {
            try await client.query(
                """
                UPDATE habitat_sessions
                SET data = \(data), version = version + 1, expires = now() + make_interval(secs => \(expiresIn.seconds))
                WHERE id = \(id) AND version = \(expectedVersion) AND expires > now()
                RETURNING version
                """, logger: logger
            ).first(decoding: Int64.self)
        }
        if let version { return StoredSession(id: id, data: data, version: version) }
        throw .versionConflict(id: id, expected: expectedVersion, current: try await get(id: id)?.version)
    }

    public func remove(id: String) async throws(SessionBackendError) {
        try await run { try await client.query("DELETE FROM habitat_sessions WHERE id = \(id)", logger: logger) }
    }

    public func set(id: String, data: Data, expiresIn: Duration, expectedVersion: Int64, fencedBy claim: LeaseClaim) async throws(SessionBackendError) -> StoredSession {
        // NB: strict, in one transaction: the row's lock first, then the write with the lease
        // checked by the clock at the check (`clock_timestamp()`). Read committed gives the
        // write a snapshot taken once the lock is held, so a write that waited for the lock
        // while the lease lapsed (and another holder took it) sees that, and writes nothing.
        // One statement can't: a row it waited for is checked again, but its lease subquery
        // isn't (seen: the late write landed, version 2 under holder B).
        let version = try await run { [logger] in
            try await client.withConnection { connection in
                _ = try await connection.query("BEGIN", logger: logger)
                do {
                    _ = try await connection.query("SELECT 1 FROM habitat_sessions WHERE id = \(id) FOR UPDATE", logger: logger)
                    let version = try await connection.query(
                        """
                        UPDATE habitat_sessions
                        SET data = \(data), version = version + 1, expires = now() + make_interval(secs => \(expiresIn.seconds))
                        WHERE id = \(id) AND version = \(expectedVersion) AND expires > now()
                          AND EXISTS (SELECT 1 FROM habitat_leases
                                      WHERE name = \(claim.name) AND holder = \(claim.holder) AND deadline > clock_timestamp())
                        RETURNING version
                        """, logger: logger
                    ).first(decoding: Int64.self)
                    _ = try await connection.query("COMMIT", logger: logger)
                    return version
                } catch {
                    _ = try? await connection.query("ROLLBACK", logger: logger)
                    throw error
                }
            }
        }
        if let version { return StoredSession(id: id, data: data, version: version) }
        guard try await holds(claim) else { throw .leaseLapsed(id: id) }
        throw .versionConflict(id: id, expected: expectedVersion, current: try await get(id: id)?.version)
    }

    public func remove(id: String, fencedBy claim: LeaseClaim) async throws(SessionBackendError) {
        let held = try await run {
            try await client.query(
                """
                WITH lease AS (SELECT 1 FROM habitat_leases WHERE name = \(claim.name) AND holder = \(claim.holder) AND deadline > clock_timestamp()),
                     removed AS (DELETE FROM habitat_sessions WHERE id = \(id) AND EXISTS (SELECT 1 FROM lease) RETURNING id)
                SELECT count(*) FROM lease
                """, logger: logger
            ).first(decoding: Int64.self)
        }
        guard held == 1 else { throw .leaseLapsed(id: id) }
    }

    /// Whether `claim`'s holder holds its lease now.
    private func holds(_ claim: LeaseClaim) async throws(SessionBackendError) -> Bool {
        try await run {
            try await client.query(
                "SELECT count(*) FROM habitat_leases WHERE name = \(claim.name) AND holder = \(claim.holder) AND deadline > clock_timestamp()",
                logger: logger
            ).first(decoding: Int64.self)
        } == 1
    }

    public func acquireLease(_ name: String, holder: String, duration: Duration) async throws(SessionBackendError) -> Bool {
        try await takeLease(name, holder: holder, duration: duration) != .busy
    }

    public func takeLease(_ name: String, holder: String, duration: Duration) async throws(SessionBackendError) -> LeaseTake {
        // NB: in one transaction under an advisory lock on the lease, the row locked first: the
        // holder read is the current one. One statement read it from its snapshot, while its
        // upsert saw a release committed since: a lease released normally was reported taken
        // over lapsed (seen in the add-on's tests, under load), which ends a session.
        try await inTransaction(lockingKey: "lease:" + name) { connection, logger in
            var previous: (String, Bool)?
            let rows = try await connection.query(
                "SELECT holder, deadline <= clock_timestamp() FROM habitat_leases WHERE name = \(name) FOR UPDATE", logger: logger
            )
            for try await row in rows.decode((String, Bool).self) { previous = row }
            if let previous, !previous.1, previous.0 != holder { return .busy }
            try await connection.query(
                """
                INSERT INTO habitat_leases (name, holder, deadline)
                VALUES (\(name), \(holder), clock_timestamp() + make_interval(secs => \(duration.seconds)))
                ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, deadline = EXCLUDED.deadline
                """, logger: logger
            )
            guard let previous, previous.0 != holder else { return .taken }
            return .takenOverLapsed(previousHolder: previous.0)
        }
    }

    public func releaseLease(_ name: String, holder: String) async throws(SessionBackendError) {
        try await run {
            try await client.query("DELETE FROM habitat_leases WHERE name = \(name) AND holder = \(holder)", logger: logger)
        }
    }

    /// Runs `body` within ``timeout``, turning whatever the database or the connection throws,
    /// and a timeout, into ``SessionBackendError/unavailable(_:)``.
    ///
    /// NB: on a timeout the query is cancelled but not awaited: a query on a connection the
    /// database dropped may take a while to notice, and the caller answers 503 at once.
    @discardableResult
    private func run<R: Sendable>(_ body: @escaping @Sendable () async throws -> R) async throws(SessionBackendError) -> R {
        let outcome = await Race.run(body, timeout: timeout)
        switch outcome {
        case .success(let value):
            return value
        case .failure(let error as PSQLError):
            // NB: PSQLError's `description` hides the server's message on purpose (it may hold
            // data); its code and the server's SQLSTATE are safe to show.
            if let state = error.serverInfo?[.sqlState] {
                throw .unavailable("PostgreSQL refused the statement (SQLSTATE \(state))")
            }
            throw .unavailable("PostgreSQL: \(error.code)")
        case .failure(is Race<R>.TimedOut):
            throw .unavailable("PostgreSQL did not answer within \(timeout)")
        case .failure(is CancellationError):
            throw .unavailable("the task was cancelled before PostgreSQL answered")
        case .failure(let error):
            throw .unavailable("PostgreSQL: \(error)")
        }
    }
}

extension PostgresRowSequence {
    /// The first row decoded as `T`, or `nil` for no row; reads the rest of the rows.
    func first<T: PostgresDecodable & Sendable>(decoding _: T.Type) async throws -> T? {
        var first: T?
        for try await value in decode(T.self) where first == nil { first = value }
        return first
    }

    /// The first row decoded as `(A, B, C)`, or `nil` for no row.
    func first<A: PostgresDecodable & Sendable, B: PostgresDecodable & Sendable, C: PostgresDecodable & Sendable>(
        decoding _: (A, B, C).Type
    ) async throws -> (A, B, C)? {
        var first: (A, B, C)?
        for try await value in decode((A, B, C).self) where first == nil { first = value }
        return first
    }
}

/// `url` with the password of its user information replaced by `***`, so no message shows it,
/// whether or not the URL parses: in a well-formed URL (`scheme://user:password@host`) the
/// password alone; in one without `://` (`postgresql//user:PW@host`, `user:PW@host`), the whole
/// user information, since where the password starts can't be told.
package func masked(_ url: String) -> String {
    guard let at = url.lastIndex(of: "@") else { return url }
    let before = url[..<at]
    // The user information starts after the scheme's "//" (or the last "/"), or at the start.
    let start = before.range(of: "//", options: .backwards)?.upperBound
        ?? before.lastIndex(of: "/").map { before.index(after: $0) }
        ?? before.startIndex
    if url.range(of: "://") != nil {
        // A user without a password shows as it is.
        guard let colon = url[start..<at].firstIndex(of: ":") else { return url }
        return url.replacingCharacters(in: url.index(after: colon)..<at, with: "***")
    }
    return start == at ? url : url.replacingCharacters(in: start..<at, with: "***")
}

extension PostgresSessionBackend {
    /// A session's remaining life in seconds, as a column. NB: the difference of two epochs, not
    /// the epoch of `expires - now()`: a row that never expires (`infinity`, written by hand)
    /// makes that subtraction fail ("cannot subtract infinite timestamps", PostgreSQL 15) or an
    /// infinite interval (17); the epochs give `Infinity`, which `remaining(_:)` bounds.
    static let remaining = "(EXTRACT(EPOCH FROM expires) - EXTRACT(EPOCH FROM now()))::float8"
}

extension Duration {
    /// A session's remaining life from `seconds` as PostgreSQL reports it, at most a billion
    /// seconds (about 31 years): an infinite or unreadable value is that long, never a crash.
    static func remaining(_ seconds: Double) -> Duration {
        .milliseconds(Int64(seconds.isFinite ? max(0, min(seconds, 1e9)) * 1000 : 1e12))
    }

    /// The duration in seconds, as PostgreSQL's `make_interval(secs =>)` takes it.
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}

extension PostgresSessionBackend {
    /// A client configuration from a URL, `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE`,
    /// without TLS (a loopback or private-network database; pass your own configuration for TLS).
    public static func configuration(url: String) throws(SessionBackendError) -> PostgresClient.Configuration {
        guard let parts = URLComponents(string: url), parts.scheme == "postgres" || parts.scheme == "postgresql",
              let host = parts.host, let user = parts.user, !user.isEmpty
        else {
            throw .unavailable("not a PostgreSQL URL (postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE): \(masked(url))")
        }
        let database = String(parts.path.drop(while: { $0 == "/" }))
        return PostgresClient.Configuration(
            host: host, port: parts.port ?? 5432, username: user, password: parts.password,
            database: database.isEmpty ? nil : database, tls: .disable
        )
    }
}

// NB: the client's configuration holds the database's password: printed or dumped, the backend
// shows its timeout only.
extension PostgresSessionBackend: CustomStringConvertible, CustomReflectable {
    /// The backend and its timeout; never the client's configuration.
    public var description: String { "PostgresSessionBackend(timeout: \(timeout))" }

    /// A mirror without the client.
    public var customMirror: Mirror { Mirror(self, children: ["timeout": timeout], displayStyle: .struct) }
}
