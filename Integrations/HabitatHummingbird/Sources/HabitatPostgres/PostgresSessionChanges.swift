import Foundation
public import HabitatServerSessions
public import Logging
public import PostgresNIO

/// The sessions table's change feed, for ``CachedSessionBackend``: `LISTEN habitat_sessions` on
/// a connection of its own, fed by the trigger ``PostgresSessionBackend/migrate()`` creates, so
/// every instance hears every committed write and removal, whichever instance (or tool) made it.
///
/// A notification can be lost only with its connection, so the feed watches the connection: it
/// sends itself a heartbeat through the pool every ``heartbeat`` and says
/// ``SessionChange/lost(_:)`` when one doesn't come back within the next, or the connection
/// ends (PostgreSQL restarted, the network dropped). It then connects again, every half second,
/// and says ``SessionChange/live`` once it listens again. A change is missed for at most about
/// two heartbeats before the cache stops trusting its copies.
public struct PostgresSessionChanges: SessionChanges {
    /// The client the feed takes its listening connection from.
    public let client: PostgresClient
    /// How often the feed checks that its connection still hears.
    public let heartbeat: Duration
    let logger: Logger

    /// The channel the trigger notifies on.
    static let channel = "habitat_sessions"

    /// - Parameters:
    ///   - client: A running PostgreSQL client; the feed holds one of its connections.
    ///   - heartbeat: How often to check the connection (1 s by default).
    ///   - logger: Where the feed logs (debug level).
    public init(client: PostgresClient, heartbeat: Duration = .seconds(1), logger: Logger = Logger(label: "habitat.sessions.changes")) {
        self.client = client
        self.heartbeat = heartbeat
        self.logger = logger
    }

    public func follow(_ handle: @escaping @Sendable (SessionChange) -> Void) async {
        let me = UUID().uuidString
        while !Task.isCancelled {
            let reason: String
            do {
                try await listen(as: me, handle)
                reason = "the listening connection ended"
            } catch let lost as Lost {
                reason = lost.reason
            } catch {
                reason = "PostgreSQL: \(type(of: error))"
            }
            if Task.isCancelled { return }
            handle(.lost(reason))
            try? await Task.sleep(for: .milliseconds(500))
        }
    }

    /// Why the feed stopped hearing.
    struct Lost: Error {
        var reason: String
    }

    /// Listens until the connection or the heartbeat fails.
    private func listen(as me: String, _ handle: @escaping @Sendable (SessionChange) -> Void) async throws {
        try await client.withConnection { connection in
            try await connection.listen(on: Self.channel) { notifications in
                let heard = LockedBox<UInt64>(0)
                handle(.live)
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        for try await notification in notifications {
                            let parts = notification.payload.split(separator: " ")
                            if parts.count == 3, parts[0] == "ping" {
                                if parts[1] == me, let beat = UInt64(parts[2]) { heard.withLock { $0 = max($0, beat) } }
                            } else if parts.count == 2 {
                                handle(.changed(id: String(parts[0]), version: Int64(parts[1])))
                            }
                        }
                        throw Lost(reason: "the listening connection ended")
                    }
                    group.addTask {
                        var beat: UInt64 = 0
                        while true {
                            beat += 1
                            let payload = "ping \(me) \(beat)"
                            do {
                                try await client.query("SELECT pg_notify(\(Self.channel), \(payload))", logger: logger)
                            } catch {
                                throw Lost(reason: "the heartbeat could not be sent")
                            }
                            try await Task.sleep(for: heartbeat)
                            guard heard.withLock({ $0 }) >= beat else {
                                throw Lost(reason: "a heartbeat did not come back within \(heartbeat)")
                            }
                        }
                    }
                    defer { group.cancelAll() }
                    try await group.next()
                }
            }
        }
    }
}

// NB: the client's configuration holds the database's password: printed or dumped, the feed
// shows its heartbeat only.
extension PostgresSessionChanges: CustomStringConvertible, CustomReflectable {
    /// The feed and its heartbeat; never the client's configuration.
    public var description: String { "PostgresSessionChanges(heartbeat: \(heartbeat))" }

    /// A mirror without the client.
    public var customMirror: Mirror { Mirror(self, children: ["heartbeat": heartbeat], displayStyle: .struct) }
}
