public import Foundation

/// A backend's change feed: every write and removal of a session, from any instance, as the
/// store commits it.
///
/// `PostgresSessionBackend`'s is `PostgresSessionChanges` (`LISTEN`/`NOTIFY`, fed by a trigger
/// on the sessions table); ``MemorySessionBackend`` is its own (one process: its own writes).
public protocol SessionChanges: Sendable {
    /// Tells `handle` of every change until the calling task is cancelled.
    ///
    /// The feed says ``SessionChange/live`` once it is sure to see every change from then on,
    /// and ``SessionChange/lost(_:)`` as soon as it may have missed one (a dropped connection,
    /// a heartbeat that didn't come back); then `live` again once it is back.
    ///
    /// A feed that can go silent without noticing (a connection across a network, which a
    /// partition leaves open with nothing passing) says ``SessionChange/liveUntil(_:)`` instead,
    /// again before each deadline passes, each time it has proof that it still hears.
    func follow(_ handle: @escaping @Sendable (SessionChange) -> Void) async
}

/// What a ``SessionChanges`` feed saw.
public enum SessionChange: Sendable, Equatable {
    /// Every change from now on will be told.
    case live
    /// As ``live``, but only until `deadline`: every change committed before the feed's last
    /// check of itself has been told, and a copy may be served until `deadline` unless the feed
    /// says so again. A feed that hangs, or whose connection goes silent, stops the copies by
    /// saying nothing: the cache sends every read to the store once `deadline` has passed.
    case liveUntil(ContinuousClock.Instant)
    /// Changes may have been missed since the last `live`; `reason` says why, for the logs.
    case lost(String)
    /// Session `id` (its stored key) was written, now at `version`; `nil` when it was removed.
    case changed(id: String, version: Int64?)
}

/// A ``SessionBackend`` that keeps, on this instance, the sessions it serves, kept coherent by
/// the backend's change feed: a request whose session is cached reads nothing from the store.
///
/// ```swift
/// let backend = PostgresSessionBackend(client: client)
/// let cached = CachedSessionBackend(backend, changes: PostgresSessionChanges(client: client))
/// let sessions = ServerSessions<MemberSession>(backend: cached)
/// // beside the server: try await cached.follow()   (a service of the application)
/// ```
///
/// Its promises:
/// - **Nothing revoked is served.** A copy is used only while the feed is ``SessionChange/live``,
///   and, for a feed that says ``SessionChange/liveUntil(_:)``, only until its last deadline:
///   a feed that hangs or goes silent without noticing stops the copies by itself. A change told
///   by the feed drops the copy of that session, a lost feed puts every copy aside and sends
///   every read to the store until the feed is live again. A sign-out at another instance is
///   refused here as soon as its notification arrives.
/// - **An outage costs one read.** When the feed is live again, the sessions whose copies were
///   put aside are read again together (``SessionBackend/get(ids:)``: one statement on
///   PostgreSQL) and kept as read; what changed or ended during the outage is read as it is
///   now, not as it was. The copies are not compared by version: a session removed and created
///   again under the same ID starts again at version 1.
/// - **No stale copy.** A read's answer is kept only if no change arrived while it was read; an
///   instance's own write drops its copy (the next read takes the new version).
/// - **No copy outlives its session**: each is kept until the session's expiry as read.
///
/// Writes, leases and purges go to the backend unchanged.
public final class CachedSessionBackend: SessionBackend {
    /// The backend every miss and every write goes to.
    public let base: any SessionBackend
    /// The feed that keeps the copies coherent.
    public let changes: any SessionChanges

    private struct Copy {
        var session: StoredSession
        var until: ContinuousClock.Instant
    }

    /// The reads of one session under way, and the changes told of it since the first began.
    private struct Pending {
        var readers = 0
        var changes: UInt64 = 0
    }

    private struct State {
        var live = false
        /// When the feed's word that it is live runs out (``SessionChange/liveUntil(_:)``);
        /// `nil`: at its next `lost`.
        var liveUntil: ContinuousClock.Instant?
        /// Counts the feed going live or lost: a read keeps its answer only if neither happened
        /// meanwhile, and no change of its session (`pending`).
        var epoch: UInt64 = 0
        var pending: [String: Pending] = [:]
        var copies: [String: Copy] = [:]
        /// The copies put aside by a lost feed, read again once it is back.
        var aside: Set<String> = []
        var hits = 0
        var misses = 0
        var restored = 0
        var lostReason: String?

        /// Whether a copy may be served at `now`: the feed is live and its word hasn't run out.
        func trusts(at now: ContinuousClock.Instant) -> Bool {
            guard live else { return false }
            return liveUntil.map { now < $0 } ?? true
        }
    }

    /// A read the copies couldn't answer, and what it saw when it started.
    private struct Missed {
        var epoch: UInt64
        var changes: UInt64
    }

    private enum Lookup {
        case hit(StoredSession)
        case miss(Missed)
    }

    private let state = LockedBox(State())
    private let clock = ContinuousClock()
    private let onLost: @Sendable (String) -> Void

    /// - Parameters:
    ///   - base: Where the sessions are.
    ///   - changes: The backend's change feed; run it with ``follow()``.
    ///   - onLost: Told, once per outage, why the feed stopped being live (for the logs); reads
    ///     go to the store until it is back.
    public init(_ base: any SessionBackend, changes: any SessionChanges, onLost: @escaping @Sendable (String) -> Void = { _ in }) {
        self.base = base
        self.changes = changes
        self.onLost = onLost
    }

    /// Follows the feed until the calling task is cancelled: run it beside the server. Until
    /// it runs (and while its feed is down) every read goes to the store.
    public func follow() async {
        // NB: changes are taken in the feed's own call, at once; a catch-up, which awaits the
        // store, runs beside it, so the changes told meanwhile are never held up behind it.
        let (resumed, resume) = AsyncStream<UInt64>.makeStream(bufferingPolicy: .bufferingNewest(1))
        await withTaskGroup(of: Void.self) { group in
            group.addTask { [weak self] in
                for await epoch in resumed { await self?.catchUp(epoch) }
            }
            await changes.follow { [weak self] change in
                if let epoch = self?.take(change) { resume.yield(epoch) }
            }
            resume.finish()
        }
        state.withLock { state in
            state.live = false
            state.copies.removeAll()
            state.aside.removeAll()
        }
    }

    /// Reads served from a copy, reads that went to the store, and copies kept again by a
    /// catch-up after an outage, since the start.
    public var counts: (hits: Int, misses: Int, restored: Int) {
        state.withLock { ($0.hits, $0.misses, $0.restored) }
    }

    /// Whether copies are in use: the feed is live, and its last deadline (if it gives them)
    /// hasn't passed.
    public var isLive: Bool {
        let now = clock.now
        return state.withLock { $0.trusts(at: now) }
    }

    /// Takes one change of the feed; returns the epoch to catch up in when the feed is back
    /// with copies put aside.
    private func take(_ change: SessionChange) -> UInt64? {
        let (lost, catchUp): (String?, UInt64?) = state.withLock { state in
            switch change {
            case .liveUntil(let deadline) where state.live:
                // The same connection, heard again: nothing was missed, the copies stand.
                state.liveUntil = max(deadline, state.liveUntil ?? deadline)
                return (nil, nil)
            case .live, .liveUntil:
                if case .liveUntil(let deadline) = change { state.liveUntil = deadline } else { state.liveUntil = nil }
                state.epoch &+= 1
                state.live = true
                state.lostReason = nil
                return (nil, state.aside.isEmpty ? nil : state.epoch)
            case .lost(let reason):
                let first = state.live || state.lostReason == nil
                state.epoch &+= 1
                state.live = false
                state.aside.formUnion(state.copies.keys)
                state.copies.removeAll()
                state.lostReason = reason
                return (first ? reason : nil, nil)
            case .changed(let id, let version):
                state.pending[id]?.changes &+= 1
                state.aside.remove(id)
                if let copy = state.copies[id], version.map({ copy.session.version < $0 }) ?? true {
                    state.copies[id] = nil
                }
                return (nil, nil)
            }
        }
        if let lost { onLost(lost) }
        return catchUp
    }

    /// Reads the sessions put aside by an outage again, together, and keeps them: unless the
    /// feed went down again meanwhile, or a change, a read or a write of one came first.
    private func catchUp(_ epoch: UInt64) async {
        let ids: [String] = state.withLock { $0.epoch == epoch ? Array($0.aside) : [] }
        guard !ids.isEmpty else { return }
        let now = clock.now
        let read: [String: StoredSession]
        do {
            read = try await base.get(ids: ids)
        } catch {
            // The store is away too: the reads that come will go to it one by one.
            state.withLock { if $0.epoch == epoch { $0.aside.removeAll() } }
            return
        }
        state.withLock { state in
            guard state.epoch == epoch, state.live else { return }
            for id in state.aside where state.copies[id] == nil && state.pending[id] == nil {
                guard let session = read[id], let expiresIn = session.expiresIn else { continue }
                state.copies[id] = Copy(session: session, until: now + expiresIn)
                state.restored += 1
            }
            state.aside.removeAll()
        }
    }

    public func get(id: String) async throws(SessionBackendError) -> StoredSession? {
        let now = clock.now
        let lookup: Lookup = state.withLock { state in
            if state.trusts(at: now), let copy = state.copies[id], copy.until > now {
                state.hits += 1
                return .hit(copy.session)
            }
            state.misses += 1
            state.pending[id, default: Pending()].readers += 1
            return .miss(Missed(epoch: state.epoch, changes: state.pending[id]?.changes ?? 0))
        }
        let missed: Missed
        switch lookup {
        case .hit(let copy): return copy
        case .miss(let miss): missed = miss
        }
        let read: StoredSession?
        do {
            read = try await base.get(id: id)
        } catch {
            finish(id, missed, keeping: nil, now: now)
            throw error
        }
        finish(id, missed, keeping: read, now: now)
        return read
    }

    /// Ends a read of session `id`: keeps `read` as its copy, unless the feed went live or lost,
    /// or a change of the session was told, while it was read (that change may be newer).
    private func finish(_ id: String, _ missed: Missed, keeping read: StoredSession?, now: ContinuousClock.Instant) {
        state.withLock { state in
            guard var pending = state.pending[id] else { return }
            let overtaken = pending.changes != missed.changes || state.epoch != missed.epoch
            pending.readers -= 1
            state.pending[id] = pending.readers == 0 ? nil : pending
            if state.live, !overtaken, let read, let expiresIn = read.expiresIn {
                state.copies[id] = Copy(session: read, until: now + expiresIn)
            }
        }
    }

    public func create(id: String, data: Data, expiresIn: Duration) async throws(SessionBackendError) -> StoredSession {
        try await dropping(id) { () throws(SessionBackendError) in try await base.create(id: id, data: data, expiresIn: expiresIn) }
    }

    public func set(id: String, data: Data, expiresIn: Duration, expectedVersion: Int64) async throws(SessionBackendError) -> StoredSession {
        try await dropping(id) { () throws(SessionBackendError) in
            try await base.set(id: id, data: data, expiresIn: expiresIn, expectedVersion: expectedVersion)
        }
    }

    public func remove(id: String) async throws(SessionBackendError) {
        try await dropping(id) { () throws(SessionBackendError) in try await base.remove(id: id) }
    }

    public func set(id: String, data: Data, expiresIn: Duration, expectedVersion: Int64, fencedBy claim: LeaseClaim) async throws(SessionBackendError) -> StoredSession {
        try await dropping(id) { () throws(SessionBackendError) in
            try await base.set(id: id, data: data, expiresIn: expiresIn, expectedVersion: expectedVersion, fencedBy: claim)
        }
    }

    public func remove(id: String, fencedBy claim: LeaseClaim) async throws(SessionBackendError) {
        try await dropping(id) { () throws(SessionBackendError) in try await base.remove(id: id, fencedBy: claim) }
    }

    public func acquireLease(_ name: String, holder: String, duration: Duration) async throws(SessionBackendError) -> Bool {
        try await base.acquireLease(name, holder: holder, duration: duration)
    }

    public func takeLease(_ name: String, holder: String, duration: Duration) async throws(SessionBackendError) -> LeaseTake {
        try await base.takeLease(name, holder: holder, duration: duration)
    }

    public func releaseLease(_ name: String, holder: String) async throws(SessionBackendError) {
        try await base.releaseLease(name, holder: holder)
    }

    public func purgeExpired() async throws(SessionBackendError) -> Int {
        try await base.purgeExpired()
    }

    public func recordAttempt(_ key: String, limit: Int, within window: Duration) async throws(SessionBackendError) -> Bool {
        try await base.recordAttempt(key, limit: limit, within: window)
    }

    public func forgetAttempts(_ key: String) async throws(SessionBackendError) {
        try await base.forgetAttempts(key)
    }

    public func recordSession(_ id: String, owner: String, limit: Int) async throws(SessionBackendError) -> [String] {
        try await base.recordSession(id, owner: owner, limit: limit)
    }

    /// Runs a write of session `id`, dropping its copy before and after (whatever the write did,
    /// the next read takes the store's).
    private func dropping<R>(_ id: String, _ write: () async throws(SessionBackendError) -> R) async throws(SessionBackendError) -> R {
        drop(id)
        defer { drop(id) }
        return try await write()
    }

    private func drop(_ id: String) {
        state.withLock { state in
            state.pending[id]?.changes &+= 1
            state.copies[id] = nil
            state.aside.remove(id)
        }
    }
}
