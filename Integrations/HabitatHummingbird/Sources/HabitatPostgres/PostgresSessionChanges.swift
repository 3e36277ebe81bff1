import Foundation
public import HabitatServerSessions
public import Logging
public import PostgresNIO

/// The sessions table's change feed, for ``CachedSessionBackend``: `LISTEN habitat_sessions` on
/// a connection of its own, fed by the trigger ``PostgresSessionBackend/migrate()`` creates, so
/// every instance hears every committed write and removal, whichever instance (or tool) made it.
///
/// A notification can be lost only with its connection, and a connection can die silently (a
/// network partition leaves it open with nothing passing), so the feed proves it still hears:
/// it sends itself a heartbeat through the pool every ``heartbeat``, and each one it hears back
/// says ``SessionChange/liveUntil(_:)`` two heartbeats after it was sent (every change committed
/// before that heartbeat has been heard). The cache serves no copy past that deadline, whatever
/// the feed is doing: a partition, or a feed stuck on a dead connection, costs at most two
/// heartbeats of copies. The feed says ``SessionChange/lost(_:)`` at once when no heartbeat came
/// back in time or the connection ends (PostgreSQL restarted, the network dropped), then
/// connects again, every half second, and is live again once it listens.
public struct PostgresSessionChanges: SessionChanges {
    /// The client the feed takes its listening connection from.
    public let client: PostgresClient
    /// How often the feed checks that its connection still hears; the cache trusts its copies
    /// for two heartbeats after the last check that came back.
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

    /// How long a heartbeat heard back vouches for the feed.
    var window: Duration { heartbeat * 2 }

    public func follow(_ handle: @escaping @Sendable (SessionChange) -> Void) async {
        let me = UUID().uuidString
        while !Task.isCancelled {
            // NB: a connection's loss is told once, as soon as it is seen (`listen` tells it
            // before it waits for its tasks to end: a query on a silent connection may not).
            let told = LockedBox(false)
            let lose: @Sendable (String) -> Void = { reason in
                if told.withLock({ (told: inout Bool) in defer { told = true }; return !told }) { handle(.lost(reason)) }
            }
            let reason: String
            do {
                try await listen(as: me, handle, lose: lose)
                reason = "the listening connection ended"
            } catch {
                reason = Self.reason(error)
            }
            if Task.isCancelled { return }
            lose(reason)
            try? await Task.sleep(for: .milliseconds(500))
        }
    }

    /// Why the feed stopped hearing.
    struct Lost: Error {
        var reason: String
    }

    static func reason(_ error: any Error) -> String {
        (error as? Lost)?.reason ?? "PostgreSQL: \(type(of: error))"
    }

    /// The heartbeats of one listening connection.
    struct Beats {
        /// When each heartbeat not yet heard back was sent.
        var sent: [UInt64: ContinuousClock.Instant] = [:]
        /// Until when the heartbeats heard back vouch for the connection.
        var deadline: ContinuousClock.Instant

        /// Takes heartbeat `beat` heard back: the deadline it gives, or `nil` when it was heard already.
        mutating func heard(_ beat: UInt64, window: Duration) -> ContinuousClock.Instant? {
            guard let sent = sent[beat] else { return nil }
            self.sent = self.sent.filter { $0.key > beat }
            deadline = max(deadline, sent + window)
            return deadline
        }
    }

    /// Listens until the connection ends or goes silent; tells `lose` as soon as it does.
    private func listen(as me: String, _ handle: @escaping @Sendable (SessionChange) -> Void, lose: @escaping @Sendable (String) -> Void) async throws {
        let clock = ContinuousClock()
        let window = window
        try await client.withConnection { connection in
            try await connection.listen(on: Self.channel) { notifications in
                let beats = LockedBox(Beats(deadline: clock.now + window))
                handle(.liveUntil(beats.withLock { $0.deadline }))
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        for try await notification in notifications {
                            let parts = notification.payload.split(separator: " ")
                            if parts.count == 3, parts[0] == "ping" {
                                guard parts[1] == me, let beat = UInt64(parts[2]) else { continue }
                                if let deadline = beats.withLock({ $0.heard(beat, window: window) }) { handle(.liveUntil(deadline)) }
                            } else if parts.count == 2 {
                                handle(.changed(id: String(parts[0]), version: Int64(parts[1])))
                            }
                        }
                        throw Lost(reason: "the listening connection ended")
                    }
                    group.addTask {   // a heartbeat every `heartbeat`, through the pool
                        var beat: UInt64 = 0
                        while true {
                            beat += 1
                            let sent = clock.now
                            beats.withLock { $0.sent[beat] = sent }
                            let payload = "ping \(me) \(beat)"
                            do {
                                try await client.query("SELECT pg_notify(\(Self.channel), \(payload))", logger: logger)
                            } catch {
                                throw Lost(reason: "the heartbeat could not be sent")
                            }
                            try await clock.sleep(until: sent + heartbeat)
                        }
                    }
                    group.addTask {   // the watch: not a query's answer, which a silent connection never gives
                        while true {
                            try await clock.sleep(for: heartbeat / 2)
                            if clock.now >= beats.withLock({ $0.deadline }) {
                                throw Lost(reason: "no heartbeat came back within \(window)")
                            }
                        }
                    }
                    defer { group.cancelAll() }
                    do {
                        try await group.next()
                    } catch {
                        if !Task.isCancelled { lose(Self.reason(error)) }
                        throw error
                    }
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
