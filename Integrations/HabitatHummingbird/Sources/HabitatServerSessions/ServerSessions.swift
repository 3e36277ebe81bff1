import Foundation
import Logging

/// A server session: its ID, its value, and the version the value was read at.
public struct ServerSession<Value: Sendable>: Sendable {
    /// The session's opaque ID: what the client presents (a cookie, a bearer token).
    public let id: String
    /// The session's value, as of ``version``.
    public var value: Value
    /// The version ``value`` was read at; a write made from it names it.
    public let version: Int64
}

extension ServerSession: Equatable where Value: Equatable {}

extension ServerSession: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The session's ID shortened, its version and the value's type: the ID is a credential,
    /// and the value may hold others (an upstream token). Print `session.value` to see it.
    public var description: String { "ServerSession<\(Value.self)>(id: \(redacted(id)), version: \(version))" }
    /// The same as ``description``.
    public var debugDescription: String { description }
    /// A mirror without the ID or the value, so `dump` and reflection-based printers stay safe.
    public var customMirror: Mirror {
        Mirror(self, children: ["id": redacted(id), "version": version], displayStyle: .struct)
    }
}

/// Typed sessions over a ``SessionBackend``: values of one `Codable` type, stored as JSON.
///
/// The backend never sees a session's ID, only its SHA-256 (``StoredSession/key(for:)``): a
/// copy of the table (a backup, a read replica, a leaked dump) signs nobody in, and a lookup's
/// timing says nothing about the IDs stored.
///
/// Every write is versioned, so two requests on one session, on one instance or on two, never
/// lose each other's update: ``update(_:maxAttempts:_:)`` rereads and reapplies its change when
/// another write came first. ``refresh(_:lease:deadline:waitLimit:when:fetch:apply:)`` spends an upstream refresh
/// token once across the fleet.
///
/// ```swift
/// let sessions = ServerSessions<MemberSession>(backend: MemorySessionBackend())
/// let signedIn = try await sessions.create(MemberSession(memberID: 1, visits: 0))
/// let visited = try await sessions.update(signedIn.id) { $0.visits += 1 }
/// ```
public struct ServerSessions<Value: Codable & Sendable>: Sendable {
    /// Where the sessions are kept.
    public let backend: any SessionBackend
    /// How long a session lives after its last write.
    public let lifetime: Duration
    /// How long a session lives after its creation, however often it is written; `nil` for no
    /// limit beyond ``lifetime``.
    public let absoluteLifetime: Duration?
    /// How a caller waits before it looks again (a lease another holds, a write another made
    /// first): a sleep. The refresh explorer (the add-on's tests) looks again at once, as the
    /// steps it schedules are what orders the callers.
    package var pause: @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }

    /// - Parameters:
    ///   - backend: Where the sessions are kept: ``MemorySessionBackend``, or
    ///     `PostgresSessionBackend` for a fleet.
    ///   - lifetime: How long a session lives after its creation or its last write.
    ///   - absoluteLifetime: How long a session lives after its creation at most, however often
    ///     it is written (a stolen session can't be kept alive forever); `nil`, the default, for
    ///     no such limit.
    public init(backend: any SessionBackend, lifetime: Duration = .seconds(3600), absoluteLifetime: Duration? = nil) {
        self.backend = backend
        self.lifetime = lifetime
        self.absoluteLifetime = absoluteLifetime
    }

    /// Stores `value` as a new session, under a new random ID (256 bits, URL-safe, followed by
    /// its creation time: tampering with it makes an ID no session has, as the backend knows a
    /// session by the hash of its whole ID).
    public func create(_ value: Value) async throws(SessionBackendError) -> ServerSession<Value> {
        let id = Self.newID(createdAt: Date())
        let data = try encode(value, id: "new")
        let expiresIn = try expiry(of: id)
        let stored = try await about(id) { key throws(SessionBackendError) in
            try await backend.create(id: key, data: data, expiresIn: expiresIn)
        }
        return ServerSession(id: id, value: value, version: stored.version)
    }

    /// The live session `id`, or `nil` when there is none (never was, removed, expired, past its
    /// ``absoluteLifetime``).
    /// - Throws: ``SessionBackendError/undecodable(id:reason:)`` when the stored value isn't a `Value`.
    public func get(_ id: String) async throws(SessionBackendError) -> ServerSession<Value>? {
        // NB: nothing to remove: every write capped the backend's expiry at the absolute deadline.
        guard (try? expiry(of: id)) != nil else { return nil }
        let stored = try await about(id) { key throws(SessionBackendError) in try await backend.get(id: key) }
        guard let stored else { return nil }
        return try decode(stored, id: id)
    }

    /// Writes `session.value`, if the session is still at `session.version`.
    /// - Throws: ``SessionBackendError/versionConflict(id:expected:current:)`` when another
    ///   write came first; nothing is written then.
    public func set(_ session: ServerSession<Value>) async throws(SessionBackendError) -> ServerSession<Value> {
        try await set(session, fencedBy: nil)
    }

    /// ``set(_:)``, fenced by `claim` when there is one.
    private func set(_ session: ServerSession<Value>, fencedBy claim: LeaseClaim?) async throws(SessionBackendError) -> ServerSession<Value> {
        let data = try encode(session.value, id: session.id)
        let expiresIn = try expiry(of: session.id)
        let stored = try await about(session.id) { key throws(SessionBackendError) in
            if let claim {
                try await backend.set(id: key, data: data, expiresIn: expiresIn, expectedVersion: session.version, fencedBy: claim)
            } else {
                try await backend.set(id: key, data: data, expiresIn: expiresIn, expectedVersion: session.version)
            }
        }
        return ServerSession(id: session.id, value: session.value, version: stored.version)
    }

    /// Reads session `id`, applies `change` and writes it back; when another write came first,
    /// reads it again and reapplies `change` to what that write left, so no update is lost.
    ///
    /// `change` may run more than once: it must only change the value it is given.
    /// - Throws: ``SessionBackendError/sessionGone(id:)`` when the session doesn't exist (any
    ///   more); ``SessionBackendError/tooMuchContention(id:attempts:)`` after `maxAttempts`
    ///   writes in a row lost to others (nothing of this update is written then).
    public func update(
        _ id: String,
        maxAttempts: Int = 100,
        _ change: (inout Value) -> Void
    ) async throws(SessionBackendError) -> ServerSession<Value> {
        try await update(id, maxAttempts: maxAttempts, fencedBy: nil, change)
    }

    /// ``update(_:maxAttempts:_:)``, each write fenced by `claim` when there is one.
    private func update(
        _ id: String,
        maxAttempts: Int = 100,
        fencedBy claim: LeaseClaim?,
        _ change: (inout Value) -> Void
    ) async throws(SessionBackendError) -> ServerSession<Value> {
        var backoff = Duration.milliseconds(1)
        for _ in 0..<max(1, maxAttempts) {
            guard var session = try await get(id) else { throw .sessionGone(id: id) }
            change(&session.value)
            do {
                return try await set(session, fencedBy: claim)
            } catch .versionConflict(_, _, current: nil) {
                throw .sessionGone(id: id)
            } catch .versionConflict {
                // Another write came first: wait a random part of a growing pause, so the
                // writers that met spread out, and try again on what it left.
                try? await pause(backoff * Double.random(in: 0...1))
                backoff = min(backoff * 2, .milliseconds(50))
            }
        }
        throw .tooMuchContention(id: id, attempts: max(1, maxAttempts))
    }

    /// Removes session `id` (signing out); removing a session that doesn't exist is not an error.
    public func remove(_ id: String) async throws(SessionBackendError) {
        try await about(id) { key throws(SessionBackendError) in try await backend.remove(id: key) }
    }

    /// Deletes the expired sessions and lapsed leases the backend still keeps; returns how many
    /// sessions went (see ``SessionBackend/purgeExpired()``).
    @discardableResult
    public func purgeExpired() async throws(SessionBackendError) -> Int {
        try await backend.purgeExpired()
    }

    /// Purges expired sessions now and then every `interval`, until the calling task is
    /// cancelled: run it beside the server, for as long as the server runs.
    ///
    /// Without it, a backend keeps every session that expired unread (members who never came
    /// back): ``MemorySessionBackend`` in memory, `PostgresSessionBackend` in its table. In a
    /// fleet, any number of instances may run it; each purge is one statement.
    ///
    /// ```swift
    /// try await withThrowingTaskGroup(of: Void.self) { group in
    ///     group.addTask { await sessions.purgeExpired(every: .seconds(600)) { logger.warning("purge: \($0)") } }
    ///     group.addTask { try await app.runService() }
    ///     try await group.next()
    ///     group.cancelAll()
    /// }
    /// ```
    /// - Parameters:
    ///   - interval: The time between two purges.
    ///   - onError: Told when a purge fails (the backend unavailable); the next one is tried
    ///     at the next interval all the same.
    public func purgeExpired(every interval: Duration, onError: (SessionBackendError) -> Void = { _ in }) async {
        while !Task.isCancelled {
            do throws(SessionBackendError) {
                _ = try await backend.purgeExpired()
            } catch {
                onError(error)
            }
            do { try await Task.sleep(for: interval) } catch { return }
        }
    }

    /// Makes session `id` fresh, spending its upstream refresh token at most once across the
    /// fleet, however many requests on however many instances find it stale at once.
    ///
    /// When `when` says the session needs a refresh, the caller takes the session's refresh
    /// lease (named `refresh:` and the session's ``StoredSession/key(for:)``), reads the
    /// session again (another instance may have refreshed it while this one waited), and only
    /// if it is still stale calls `fetch`, applies the answer with `apply` and releases the
    /// lease, on every path. Callers that find the lease taken wait and read again, for
    /// `waitLimit` at most. A holder that crashed keeps the lease until its deadline, `lease`
    /// after it was taken; then another instance refreshes.
    ///
    /// A refresh token is sent upstream at most once. Once `fetch` may have reached the
    /// upstream, any end but "new tokens received and written under the lease" ends the
    /// session (its member signs in again) instead of keeping a token that may be spent, and the
    /// lease is left in place, naming it spent:
    /// - **A total deadline.** `fetch` gets `deadline` (half the lease by default, never more
    ///   than nine tenths of it), however slowly the upstream trickles its answer. When it
    ///   passes, the call throws ``SessionBackendError/refreshTimedOut(id:after:)``.
    /// - **An unclear answer.** `fetch` throws (a dropped connection, a 500 after the upstream
    ///   rotated the token): the call throws ``SessionBackendError/refreshUnconfirmed(id:reason:)``.
    ///   Unless the error says the request never left (a `URLError` of no connection:
    ///   `.notConnectedToInternet`, `.cannotFindHost`, `.cannotConnectToHost`,
    ///   `.dnsLookupFailed`): then the session stays, the lease is released, and the call
    ///   throws that error.
    /// - **Fenced writes.** The answer is written only while this caller still holds the lease
    ///   (``SessionBackend/set(id:data:expiresIn:expectedVersion:fencedBy:)``). When it can't be
    ///   written (the lease lapsed, the database stopped), the session is removed and the call
    ///   throws ``SessionBackendError/refreshUnconfirmed(id:reason:)``; the log says so
    ///   (`Logger.current`, never a token).
    /// - **A lapsed lease marks a spent token.** A caller that takes over a lease that lapsed
    ///   without being released (its holder crashed, stalled, or ended as above, the database
    ///   down when it tried to remove the session) doesn't call `fetch`: the session may hold a
    ///   spent token, so it is removed (``SessionBackendError/refreshUnconfirmed(id:reason:)``).
    /// - **A versioned write.** Other fields written meanwhile (a visit count) are kept.
    ///
    /// ```swift
    /// let fresh = try await sessions.refresh(id, when: { $0.upstream.expiresAt < Date() }) { session in
    ///     try await tokenServer.refresh(session.upstream.refreshToken)
    /// } apply: { session, answer in
    ///     session.upstream = answer
    /// }
    /// ```
    /// - Parameters:
    ///   - lease: How long a holder may keep the lease.
    ///   - deadline: How long `fetch` may take, in all; `lease / 2` by default.
    ///   - waitLimit: How long to wait for another holder's refresh; `2 × lease` by default.
    /// - Returns: The fresh session: refreshed here, or by another caller.
    /// - Throws: ``SessionBackendError/refreshUnconfirmed(id:reason:)`` or
    ///   ``SessionBackendError/refreshTimedOut(id:after:)`` when the session ended (see above);
    ///   what `fetch` throws when its request never left (the lease is released first); another
    ///   ``SessionBackendError``, or `CancellationError` when the task is cancelled while it waits.
    public func refresh<Answer: Sendable>(
        _ id: String,
        lease: Duration = .seconds(30),
        deadline: Duration? = nil,
        waitLimit: Duration? = nil,
        when needsRefresh: (Value) -> Bool,
        fetch: @escaping @Sendable (Value) async throws -> Answer,
        apply: (inout Value, Answer) -> Void
    ) async throws -> ServerSession<Value> {
        let claim = LeaseClaim(
            name: "refresh:\(StoredSession.key(for: id))",
            holder: "\(ProcessInfo.processInfo.hostName)/\(ProcessInfo.processInfo.processIdentifier)/\(UUID().uuidString)"
        )
        let deadline = min(deadline ?? lease / 2, lease * 0.9)
        let waitLimit = waitLimit ?? lease * 2
        let started = ContinuousClock.now
        var backoff = Duration.milliseconds(5)
        while true {
            guard let session = try await get(id) else { throw SessionBackendError.sessionGone(id: id) }
            guard needsRefresh(session.value) else { return session }
            switch try await backend.takeLease(claim.name, holder: claim.holder, duration: lease) {
            case .taken:
                // NB: released only when the token wasn't sent or its successor was written;
                // otherwise the lease stays, and marks the token spent.
                var release = true
                do {
                    let refreshed = try await refreshHolding(claim, id, deadline: deadline, when: needsRefresh, fetch: fetch, apply: apply, release: &release)
                    if release { try? await backend.releaseLease(claim.name, holder: claim.holder) }
                    return refreshed
                } catch {
                    // Best effort: if the release fails too, the lease lapses at its deadline.
                    if release { try? await backend.releaseLease(claim.name, holder: claim.holder) }
                    throw error
                }
            case .takenOverLapsed:
                try await end(id, fencedBy: claim, because: "an earlier refresh's lease lapsed: it may have spent the refresh token")
            case .busy:
                // Another caller holds the lease: it is refreshing, or it crashed and its lease
                // will lapse. Read again after a pause.
                guard ContinuousClock.now - started < waitLimit else { throw SessionBackendError.refreshWaitTimedOut(id: id, after: waitLimit) }
                try await pause(backoff)
                backoff = min(backoff * 2, .milliseconds(100))
            }
        }
    }

    private func refreshHolding<Answer: Sendable>(
        _ claim: LeaseClaim,
        _ id: String,
        deadline: Duration,
        when needsRefresh: (Value) -> Bool,
        fetch: @escaping @Sendable (Value) async throws -> Answer,
        apply: (inout Value, Answer) -> Void,
        release: inout Bool
    ) async throws -> ServerSession<Value> {
        guard let current = try await get(id) else { throw SessionBackendError.sessionGone(id: id) }
        guard needsRefresh(current.value) else { return current }
        let value = current.value
        release = false
        switch await Race.run({ try await fetch(value) }, timeout: deadline) {
        case .success(let answer):
            do {
                let refreshed = try await update(id, fencedBy: claim) { apply(&$0, answer) }
                release = true
                return refreshed
            } catch {
                try await end(id, fencedBy: claim, because: "new tokens arrived but could not be written: \(error)")
            }
        case .failure(is Race<Answer>.TimedOut):
            try await about(id) { key throws(SessionBackendError) in try await backend.remove(id: key, fencedBy: claim) }
            throw SessionBackendError.refreshTimedOut(id: id, after: deadline)
        case .failure(let error) where Self.neverSent(error):
            release = true
            throw error
        case .failure(let error):
            try await end(id, fencedBy: claim, because: "the upstream's answer was lost: \(type(of: error))")
        }
    }

    /// Ends session `id`, whose refresh token may have been spent without a successor stored:
    /// removes it (fenced by `claim` when the lease is still its holder's, at once otherwise: a
    /// session that may hold a spent token is no one's to keep), logs why, and throws
    /// ``SessionBackendError/refreshUnconfirmed(id:reason:)``. When even the removal fails (the
    /// database is down), the lease left in place still marks the token spent.
    private func end(_ id: String, fencedBy claim: LeaseClaim, because reason: String) async throws -> Never {
        Logger.current.warning("ending a session whose refresh token may be spent", metadata: [
            "session": "\(redacted(id))", "reason": "\(reason)",
        ])
        do {
            try await about(id) { key throws(SessionBackendError) in try await backend.remove(id: key, fencedBy: claim) }
        } catch .leaseLapsed {
            try? await about(id) { key throws(SessionBackendError) in try await backend.remove(id: key) }
        } catch {}
        throw SessionBackendError.refreshUnconfirmed(id: id, reason: reason)
    }

    /// Whether `error`, thrown by a refresh's `fetch`, says its request never left: a `URLError`
    /// of no connection. Anything else may have reached the upstream.
    static func neverSent(_ error: any Error) -> Bool {
        guard let error = error as? URLError else { return false }
        return [.notConnectedToInternet, .cannotFindHost, .cannotConnectToHost, .dnsLookupFailed].contains(error.code)
    }

    private func encode(_ value: Value, id: String) throws(SessionBackendError) -> Data {
        do {
            return try JSONEncoder().encode(value)
        } catch {
            throw .undecodable(id: id, reason: "can't be encoded: \(error)")
        }
    }

    private func decode(_ stored: StoredSession, id: String) throws(SessionBackendError) -> ServerSession<Value> {
        do {
            return ServerSession(id: id, value: try JSONDecoder().decode(Value.self, from: stored.data), version: stored.version)
        } catch {
            throw .undecodable(id: id, reason: "\(error)")
        }
    }

    /// Runs `call`, a backend call about session `id`, with the key `id` is stored under; its
    /// errors name `id`, not the key.
    private func about<R>(
        _ id: String,
        _ call: (_ key: String) async throws(SessionBackendError) -> R
    ) async throws(SessionBackendError) -> R {
        do {
            return try await call(StoredSession.key(for: id))
        } catch {
            throw error.naming(id)
        }
    }

    /// A new session ID: 32 random bytes from the system's secure generator, base64url, then
    /// `.` and the creation time in seconds since 1970, base 36.
    static func newID(createdAt: Date) -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        return Data(bytes).base64URL + "." + String(Int(createdAt.timeIntervalSince1970), radix: 36)
    }

    /// How long a write of session `id` keeps it: ``lifetime``, or less when its
    /// ``absoluteLifetime`` ends sooner.
    /// - Throws: ``SessionBackendError/sessionGone(id:)`` past its absolute lifetime, or for an
    ///   ID that names no creation time while there is one.
    private func expiry(of id: String) throws(SessionBackendError) -> Duration {
        guard let absoluteLifetime else { return lifetime }
        guard let mark = id.lastIndex(of: "."), let created = Int(id[id.index(after: mark)...], radix: 36) else {
            throw .sessionGone(id: id)
        }
        let left = absoluteLifetime - .seconds(Date().timeIntervalSince1970 - Double(created))
        guard left > .zero else { throw .sessionGone(id: id) }
        return min(lifetime, left)
    }
}

// NB: a backend may hold a database client whose configuration has its password: printed or
// dumped, the sessions show the backend's type and their lifetimes only.
extension ServerSessions: CustomStringConvertible, CustomReflectable {
    /// The backend's type and the lifetimes.
    public var description: String {
        "ServerSessions<\(Value.self)>(backend: \(type(of: backend)), lifetime: \(lifetime))"
    }

    /// A mirror without the backend's contents.
    public var customMirror: Mirror {
        Mirror(self, children: [
            "backend": "\(type(of: backend))", "lifetime": lifetime, "absoluteLifetime": absoluteLifetime as Any,
        ], displayStyle: .struct)
    }
}
