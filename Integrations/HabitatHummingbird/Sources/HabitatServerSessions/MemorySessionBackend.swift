public import Foundation

/// A ``SessionBackend`` in the process's memory: for tests, and for an app with one instance.
///
/// It keeps the same promises as the database backend (versioned writes, leases with a
/// deadline, expiry), on the process's monotonic clock; its sessions end with the process.
/// An expired session is dropped when it is next asked for, or by ``purgeExpired()``: a
/// long-running server runs ``ServerSessions/purgeExpired(every:onError:)`` beside it, or
/// the sessions of members who never come back stay in memory.
public final class MemorySessionBackend: SessionBackend {
    private struct Entry {
        var session: StoredSession
        var expires: ContinuousClock.Instant
    }

    private struct State {
        /// Read freely; written only through `put(_:_:)`, which tells the followers.
        var sessions: [String: Entry] = [:]
        var leases: [String: (holder: String, deadline: ContinuousClock.Instant)] = [:]
        var attempts: [String: [ContinuousClock.Instant]] = [:]
        var owned: [String: [String]] = [:]
        var followers: [UInt64: @Sendable (SessionChange) -> Void] = [:]
        var nextFollower: UInt64 = 0
        /// The changes made under the lock, told once it is released.
        var told: [SessionChange] = []

        /// Stores `entry` as session `id` (`nil` removes it), noting the change for the followers.
        mutating func put(_ id: String, _ entry: Entry?) {
            let existed = sessions[id] != nil
            sessions[id] = entry
            // A session gone is no longer one its owner holds.
            if entry == nil, existed {
                owned = owned.compactMapValues { held in
                    let kept = held.filter { $0 != id }
                    return kept.isEmpty ? nil : kept
                }
            }
            if !followers.isEmpty, existed || entry != nil { told.append(.changed(id: id, version: entry?.session.version)) }
        }
    }

    private let state = LockedBox(State())
    private let now: @Sendable () -> ContinuousClock.Instant

    public init() {
        now = { ContinuousClock.now }
    }

    /// A backend on a clock of the caller's: the refresh explorer's (the add-on's tests), whose
    /// time moves only when it says, so a lease lapses at a chosen step of a run.
    package init(now: @escaping @Sendable () -> ContinuousClock.Instant) {
        self.now = now
    }

    /// Each lease's holder, and whether its deadline passed (it lapsed without being released):
    /// what the refresh explorer checks its invariants against.
    package var leases: [String: (holder: String, lapsed: Bool)] {
        state.withLock { state in
            let now = now()
            return state.leases.mapValues { ($0.holder, $0.deadline <= now) }
        }
    }

    private func withState<R>(_ body: (inout State, ContinuousClock.Instant) throws(SessionBackendError) -> R) throws(SessionBackendError) -> R {
        var told: [SessionChange] = []
        var followers: [@Sendable (SessionChange) -> Void] = []
        defer { for change in told { for follower in followers { follower(change) } } }
        return try state.withLock { (state) throws(SessionBackendError) in
            defer {
                told = state.told
                state.told.removeAll()
                if !told.isEmpty { followers = Array(state.followers.values) }
            }
            return try body(&state, now())
        }
    }

    /// The live entry `id`; an expired one is dropped.
    private static func live(_ id: String, in state: inout State, at now: ContinuousClock.Instant) -> Entry? {
        guard let entry = state.sessions[id] else { return nil }
        guard entry.expires > now else {
            state.put(id, nil)
            return nil
        }
        return entry
    }

    public func create(id: String, data: Data, expiresIn: Duration) async throws(SessionBackendError) -> StoredSession {
        try withState { state, now throws(SessionBackendError) in
            guard Self.live(id, in: &state, at: now) == nil else { throw .duplicateID(id) }
            let session = StoredSession(id: id, data: data, version: 1)
            state.put(id, Entry(session: session, expires: now + expiresIn))
            return session
        }
    }

    public func get(id: String) async throws(SessionBackendError) -> StoredSession? {
        try withState { state, now in
            guard let entry = Self.live(id, in: &state, at: now) else { return nil }
            var session = entry.session
            session.expiresIn = entry.expires - now
            return session
        }
    }

    public func set(id: String, data: Data, expiresIn: Duration, expectedVersion: Int64) async throws(SessionBackendError) -> StoredSession {
        try withState { state, now throws(SessionBackendError) in
            try Self.write(id, data, expiresIn, expectedVersion, in: &state, at: now)
        }
    }

    /// A versioned write of session `id`.
    private static func write(
        _ id: String, _ data: Data, _ expiresIn: Duration, _ expectedVersion: Int64, in state: inout State, at now: ContinuousClock.Instant
    ) throws(SessionBackendError) -> StoredSession {
        guard let entry = live(id, in: &state, at: now), entry.session.version == expectedVersion else {
            throw .versionConflict(id: id, expected: expectedVersion, current: live(id, in: &state, at: now)?.session.version)
        }
        let session = StoredSession(id: id, data: data, version: expectedVersion + 1)
        state.put(id, Entry(session: session, expires: now + expiresIn))
        return session
    }

    public func remove(id: String) async throws(SessionBackendError) {
        try withState { state, _ in state.put(id, nil) }
    }

    public func set(id: String, data: Data, expiresIn: Duration, expectedVersion: Int64, fencedBy claim: LeaseClaim) async throws(SessionBackendError) -> StoredSession {
        try withState { state, now throws(SessionBackendError) in
            guard Self.holds(claim, in: state, at: now) else { throw .leaseLapsed(id: id) }
            return try Self.write(id, data, expiresIn, expectedVersion, in: &state, at: now)
        }
    }

    public func remove(id: String, fencedBy claim: LeaseClaim) async throws(SessionBackendError) {
        try withState { state, now throws(SessionBackendError) in
            guard Self.holds(claim, in: state, at: now) else { throw .leaseLapsed(id: id) }
            state.put(id, nil)
        }
    }

    /// Whether `claim`'s holder holds its lease at `now`.
    private static func holds(_ claim: LeaseClaim, in state: State, at now: ContinuousClock.Instant) -> Bool {
        guard let lease = state.leases[claim.name] else { return false }
        return lease.holder == claim.holder && lease.deadline > now
    }

    public func acquireLease(_ name: String, holder: String, duration: Duration) async throws(SessionBackendError) -> Bool {
        try withState { state, now in
            if let lease = state.leases[name], lease.deadline > now, lease.holder != holder { return false }
            state.leases[name] = (holder, now + duration)
            return true
        }
    }

    public func takeLease(_ name: String, holder: String, duration: Duration) async throws(SessionBackendError) -> LeaseTake {
        try withState { state, now in
            let previous = state.leases[name]
            if let previous, previous.deadline > now, previous.holder != holder { return .busy }
            state.leases[name] = (holder, now + duration)
            guard let previous, previous.holder != holder else { return .taken }
            return .takenOverLapsed(previousHolder: previous.holder)
        }
    }

    public func releaseLease(_ name: String, holder: String) async throws(SessionBackendError) {
        try withState { state, _ in
            if state.leases[name]?.holder == holder { state.leases[name] = nil }
        }
    }

    public func recordAttempt(_ key: String, limit: Int, within window: Duration) async throws(SessionBackendError) -> Bool {
        try withState { state, now in
            var recent = state.attempts[key, default: []].filter { now - $0 < window }
            let recorded = recent.count < limit
            if recorded { recent.append(now) }
            state.attempts[key] = recent.isEmpty ? nil : recent
            return recorded
        }
    }

    public func forgetAttempts(_ key: String) async throws(SessionBackendError) {
        try withState { state, _ in state.attempts[key] = nil }
    }

    public func recordSession(_ id: String, owner: String, limit: Int) async throws(SessionBackendError) -> [String] {
        try withState { state, _ in
            var held = state.owned[owner, default: []].filter { $0 != id }
            held.append(id)
            let excess = Array(held.prefix(max(0, held.count - limit)))
            state.owned[owner] = Array(held.dropFirst(excess.count))
            return excess
        }
    }

    @discardableResult
    public func purgeExpired() async throws(SessionBackendError) -> Int {
        try withState { state, now in
            // NB: a lapsed refresh lease of a session still there marks a refresh token that may
            // be spent (see `ServerSessions.refresh`): it stays.
            state.leases = state.leases.filter { name, lease in
                lease.deadline > now || (name.hasPrefix("refresh:") && state.sessions[String(name.dropFirst("refresh:".count))] != nil)
            }
            let expired = state.sessions.filter { $0.value.expires <= now }.keys
            for id in expired { state.put(id, nil) }
            return expired.count
        }
    }
}

extension MemorySessionBackend: SessionChanges {
    /// Tells `handle` of every write and removal made through this backend, until the calling
    /// task is cancelled: live at once (one process sees all its own changes).
    public func follow(_ handle: @escaping @Sendable (SessionChange) -> Void) async {
        let id = state.withLock { state in
            state.nextFollower += 1
            state.followers[state.nextFollower] = handle
            return state.nextFollower
        }
        handle(.live)
        // NB: a stream that never yields, so the wait ends with the task's cancellation.
        let (wait, open) = AsyncStream<Never>.makeStream()
        for await _ in wait {}
        open.finish()
        _ = state.withLock { $0.followers.removeValue(forKey: id) }
    }
}
