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
/// connects again, every half second, and is live again once it listens: on a new connection,
/// without waiting for the lost one's tasks (a query on a silent connection may not return until
/// the connection gives up), whose word no longer reaches the cache.
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
        while !Task.isCancelled {
            // NB: a connection runs in a task of its own, and the next one doesn't wait for it:
            // its query on a silent connection may not return until the connection gives up.
            // Once it is lost (or the feed stops), nothing it says reaches the cache.
            let link = Link(handle)
            let connection = Task { await listen(link) }
            await withTaskCancellationHandler {
                await link.lost()
            } onCancel: {
                link.close()
                connection.cancel()
            }
            connection.cancel()
            if Task.isCancelled { return }
            try? await Task.sleep(for: .milliseconds(500))
        }
    }

    /// What one listening connection tells the cache: everything until it is lost, then nothing.
    final class Link: Sendable {
        private let handle: @Sendable (SessionChange) -> Void
        private let state = LockedBox<(open: Bool, waiter: CheckedContinuation<Void, Never>?)>((true, nil))

        init(_ handle: @escaping @Sendable (SessionChange) -> Void) {
            self.handle = handle
        }

        /// Tells `change`, unless the connection was lost.
        func tell(_ change: SessionChange) {
            // NB: under the lock, so no word of the connection is told after its loss.
            state.withLock { if $0.open { handle(change) } }
        }

        /// Tells the loss, the first time.
        func lose(_ reason: String) {
            end { handle(.lost(reason)) }
        }

        /// Ends the link without a word: the feed stops.
        func close() {
            end {}
        }

        private func end(_ last: () -> Void) {
            let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
                guard state.open else { return nil }
                state.open = false
                last()
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume()
        }

        /// Returns once the link has ended.
        func lost() async {
            await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
                let ended = state.withLock { state in
                    if state.open { state.waiter = waiter }
                    return !state.open
                }
                if ended { waiter.resume() }
            }
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
        /// Until when the connection is vouched for: by its start, then by its listening, then
        /// by each heartbeat heard back.
        var deadline: ContinuousClock.Instant

        /// Moves the deadline to `deadline` if that is later; returns the deadline.
        mutating func vouch(until deadline: ContinuousClock.Instant) -> ContinuousClock.Instant {
            self.deadline = max(self.deadline, deadline)
            return self.deadline
        }

        /// Takes heartbeat `beat` heard back: the deadline it gives, or `nil` when it was heard already.
        mutating func heard(_ beat: UInt64, window: Duration) -> ContinuousClock.Instant? {
            guard let sent = sent[beat] else { return nil }
            self.sent = self.sent.filter { $0.key > beat }
            return vouch(until: sent + window)
        }
    }

    /// Connects, listens and hears until the connection ends or goes silent (or never answers);
    /// tells `link` it is lost as soon as it is, not once its tasks have ended.
    private func listen(_ link: Link) async {
        // NB: each connection's heartbeats carry its own name: one that outlives its loss
        // (stuck on a silent connection) can't vouch for the next.
        let me = UUID().uuidString
        let clock = ContinuousClock()
        let window = window
        let beats = LockedBox(Beats(deadline: clock.now + window))
        await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {   // the connection: listens, then hears every change and its own heartbeats
                try await client.withConnection { connection in
                    try await connection.listen(on: Self.channel) { notifications in
                        link.tell(.liveUntil(beats.withLock { $0.vouch(until: clock.now + window) }))
                        for try await notification in notifications {
                            let parts = notification.payload.split(separator: " ")
                            if parts.count == 3, parts[0] == "ping" {
                                guard parts[1] == me, let beat = UInt64(parts[2]) else { continue }
                                if let deadline = beats.withLock({ $0.heard(beat, window: window) }) { link.tell(.liveUntil(deadline)) }
                            } else if parts.count == 2 {
                                link.tell(.changed(id: String(parts[0]), version: Int64(parts[1])))
                            }
                        }
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
                link.lose("the listening connection ended")
            } catch {
                link.lose(Self.reason(error))
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
