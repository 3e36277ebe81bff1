import Crypto
public import Foundation

/// Where a fleet of server instances keeps its sessions: one store they all reach, with
/// versioned writes and refresh leases.
///
/// The shape is a Hummingbird `PersistDriver`'s (create, get, set, remove, each with an
/// expiry) plus two things that driver lacks, and that several instances serving one member
/// need:
///
/// - **Versions.** Every write names the version it read (`expectedVersion`); a write made
///   from a stale read fails with ``SessionBackendError/versionConflict(id:expected:current:)``
///   instead of silently overwriting what another request wrote meanwhile. ``ServerSessions``
///   rereads and retries for you.
/// - **Leases.** ``acquireLease(_:holder:duration:)`` lets one instance at a time do a piece of
///   work for a session, such as spending a refresh token, across the fleet. A lease ends when
///   its holder releases it or at its deadline, so a crashed holder's lease lapses.
/// - **Fenced writes.** ``set(id:data:expiresIn:expectedVersion:fencedBy:)`` and
///   ``remove(id:fencedBy:)`` write only while the writer still holds its lease, checked by the
///   store in the same statement as the write: a holder that stalled past its deadline (a
///   paused process, a slow upstream) can't write over what the next holder wrote.
///
/// Expiries and lease deadlines are durations, counted on the backend's own clock (the
/// database's, for `PostgresSessionBackend`), so instances whose clocks disagree still agree
/// on when a session ends.
///
/// Implementations: ``MemorySessionBackend`` (one process: tests, single-instance apps) and
/// `PostgresSessionBackend` (module HabitatPostgres: a fleet).
public protocol SessionBackend: Sendable {
    /// Stores a new session under `id`, at version 1.
    /// - Throws: ``SessionBackendError/duplicateID(_:)`` when a live session has this ID.
    func create(id: String, data: Data, expiresIn: Duration) async throws(SessionBackendError) -> StoredSession

    /// The live session `id`, or `nil` when there is none or it has expired.
    func get(id: String) async throws(SessionBackendError) -> StoredSession?

    /// The live sessions among `ids`, each as ``get(id:)`` reads it, in one round trip where the
    /// backend can (one statement on PostgreSQL): what ``CachedSessionBackend`` reads to catch
    /// up after an outage of its feed. An ID that names no live session is left out.
    func get(ids: [String]) async throws(SessionBackendError) -> [String: StoredSession]

    /// Replaces session `id`'s data, if its version is still `expectedVersion`; the stored
    /// version goes up by one, and the session lives `expiresIn` from now.
    /// - Throws: ``SessionBackendError/versionConflict(id:expected:current:)`` when another
    ///   write came first, or the session is gone; nothing is written then.
    func set(id: String, data: Data, expiresIn: Duration, expectedVersion: Int64) async throws(SessionBackendError) -> StoredSession

    /// Removes session `id`; removing a session that doesn't exist is not an error.
    func remove(id: String) async throws(SessionBackendError)

    /// Replaces session `id`'s data as ``set(id:data:expiresIn:expectedVersion:)`` does, only
    /// while `claim`'s holder still holds its lease, checked atomically with the write.
    /// - Throws: ``SessionBackendError/leaseLapsed(id:)`` when the lease lapsed or another holder
    ///   has it; ``SessionBackendError/versionConflict(id:expected:current:)`` as `set` does.
    ///   Nothing is written then.
    func set(id: String, data: Data, expiresIn: Duration, expectedVersion: Int64, fencedBy claim: LeaseClaim) async throws(SessionBackendError) -> StoredSession

    /// Removes session `id`, only while `claim`'s holder still holds its lease; removing a
    /// session that doesn't exist is not an error.
    /// - Throws: ``SessionBackendError/leaseLapsed(id:)`` when the lease lapsed or another holder
    ///   has it; nothing is removed then.
    func remove(id: String, fencedBy claim: LeaseClaim) async throws(SessionBackendError)

    /// Takes the lease `name` for `holder` until `duration` from now, if no one else holds it
    /// (a lease past its deadline is no one's). Returns whether `holder` has it.
    func acquireLease(_ name: String, holder: String, duration: Duration) async throws(SessionBackendError) -> Bool

    /// Takes the lease `name` for `holder` as ``acquireLease(_:holder:duration:)`` does, and
    /// says whether it took over a lease that lapsed without being released: its holder crashed,
    /// stalled past its deadline, or left it in place on purpose because what it did under it
    /// can't be undone (a refresh token it may have spent). The default can't tell, and says
    /// ``LeaseTake/taken``; the backends here can.
    func takeLease(_ name: String, holder: String, duration: Duration) async throws(SessionBackendError) -> LeaseTake

    /// Ends `holder`'s lease `name`; does nothing when `holder` doesn't hold it (any more).
    func releaseLease(_ name: String, holder: String) async throws(SessionBackendError)

    /// Deletes the sessions that have expired and the leases past their deadline; returns how
    /// many sessions went.
    ///
    /// Expired sessions are invisible already: this reclaims the space of the ones nobody asks
    /// for again (a member who never came back). ``ServerSessions/purgeExpired(every:onError:)``
    /// calls it on a schedule.
    ///
    /// The default does nothing and returns 0, which is right for a store that drops expired
    /// entries itself (a key-value store with time-to-live); a backend that keeps them must
    /// implement it.
    func purgeExpired() async throws(SessionBackendError) -> Int

    /// Records an attempt under `key` (a sign-in for a name, say) for every instance sharing this
    /// backend, when fewer than `limit` were recorded within the last `window`; returns whether it
    /// did. The check and the record are one step, so concurrent callers, on one instance or
    /// several, never pass the limit together: record before the costly work (hashing a
    /// password), not after it.
    func recordAttempt(_ key: String, limit: Int, within window: Duration) async throws(SessionBackendError) -> Bool

    /// Forgets the attempts recorded under `key` (the sign-in succeeded).
    func forgetAttempts(_ key: String) async throws(SessionBackendError)

    /// Records that `owner` holds the session stored under `id` (its ``StoredSession/key(for:)``),
    /// for every instance sharing this backend; returns the owner's oldest sessions past `limit`,
    /// which the caller ends, and which are counted no more. A cap on sessions per member that
    /// holds across instances and restarts.
    func recordSession(_ id: String, owner: String, limit: Int) async throws(SessionBackendError) -> [String]
}

/// What ``SessionBackend/takeLease(_:holder:duration:)`` did.
public enum LeaseTake: Sendable, Equatable {
    /// Another holder holds the lease.
    case busy
    /// The lease is the caller's: it was free, or the caller's already.
    case taken
    /// The lease is the caller's, taken over from `previousHolder`, whose lease lapsed without
    /// being released.
    case takenOverLapsed(previousHolder: String)
}

extension SessionBackend {
    public func purgeExpired() async throws(SessionBackendError) -> Int { 0 }

    public func takeLease(_ name: String, holder: String, duration: Duration) async throws(SessionBackendError) -> LeaseTake {
        try await acquireLease(name, holder: holder, duration: duration) ? .taken : .busy
    }

    /// Reads the sessions one by one, with ``get(id:)``: for a backend without a bulk read.
    public func get(ids: [String]) async throws(SessionBackendError) -> [String: StoredSession] {
        var sessions: [String: StoredSession] = [:]
        for id in ids {
            if let session = try await get(id: id) { sessions[id] = session }
        }
        return sessions
    }
}

/// A session as a ``SessionBackend`` stores it.
public struct StoredSession: Sendable, Hashable {
    /// The key the session is stored under: for ``ServerSessions``, ``key(for:)`` of the ID
    /// the client presents, never the ID itself.
    public var id: String
    /// The session's value, encoded.
    public var data: Data
    /// Counts the writes: 1 when created, one more for each ``SessionBackend/set(id:data:expiresIn:expectedVersion:)``.
    public var version: Int64
    /// How long the session had to live when it was read, if the backend says
    /// (``SessionBackend/get(id:)`` of both backends does): what ``CachedSessionBackend`` keeps
    /// a copy for, at most. Not part of the stored value: two reads of one version are equal.
    public var expiresIn: Duration?

    public init(id: String, data: Data, version: Int64, expiresIn: Duration? = nil) {
        self.id = id
        self.data = data
        self.version = version
        self.expiresIn = expiresIn
    }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.id == rhs.id && lhs.data == rhs.data && lhs.version == rhs.version
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(id)
        hasher.combine(data)
        hasher.combine(version)
    }
}

/// A lease as its holder names it in a fenced write.
///
/// The fencing value is the holder: ``ServerSessions`` makes a new one, unique, for every
/// refresh, so a write fenced by it passes only while that very acquisition of the lease is
/// live (not released, not past its deadline, not taken over).
public struct LeaseClaim: Sendable, Hashable {
    /// The lease's name.
    public var name: String
    /// Who holds it: unique to one acquisition.
    public var holder: String

    public init(name: String, holder: String) {
        self.name = name
        self.holder = holder
    }
}

/// What went wrong with a session backend.
public enum SessionBackendError: Error, Equatable, CustomStringConvertible {
    /// A write read version `expected`, but the session is at `current` now (another request
    /// wrote it meanwhile), or gone (`current` is `nil`: removed or expired). Nothing was written.
    case versionConflict(id: String, expected: Int64, current: Int64?)
    /// A session with this ID already exists.
    case duplicateID(String)
    /// The backend can't be reached or refused the operation; `reason` says what happened.
    /// A server answers 503: nothing about the request's member is known.
    case unavailable(String)
    /// A stored session's data couldn't be decoded as the session's type.
    case undecodable(id: String, reason: String)
    /// An update kept meeting newer writes and gave up after `attempts` tries.
    case tooMuchContention(id: String, attempts: Int)
    /// The session is gone (removed or expired) while an update or a refresh was under way.
    case sessionGone(id: String)
    /// A fenced write was refused: the writer's lease on the session lapsed, or another holder
    /// took it. Nothing was written.
    case leaseLapsed(id: String)
    /// The upstream didn't answer the session's refresh within its deadline. Its refresh token
    /// may have been spent, and spending it again would look like theft to the upstream, so the
    /// session was ended: its member signs in again.
    case refreshTimedOut(id: String, after: Duration)
    /// The session's refresh token may have been spent, but no new one was stored under the
    /// refresh's lease, so the session was ended rather than spend it again: its member signs in
    /// again. `reason` says what happened (never a token).
    case refreshUnconfirmed(id: String, reason: String)
    /// Another instance's refresh of the session didn't end within the time a caller waits.
    case refreshWaitTimedOut(id: String, after: Duration)

    public var description: String {
        switch self {
        case let .versionConflict(id, expected, current?):
            "session \(redacted(id)) was written meanwhile: read version \(expected), it is at version \(current) now"
        case let .versionConflict(id, expected, nil):
            "session \(redacted(id)) is gone (removed or expired) since version \(expected) was read"
        case let .duplicateID(id): "a session with the ID \(redacted(id)) already exists"
        case let .unavailable(reason): "the session store is unavailable: \(reason)"
        case let .undecodable(id, reason): "session \(redacted(id)) can't be decoded: \(reason)"
        case let .tooMuchContention(id, attempts): "session \(redacted(id)) changed under \(attempts) attempts in a row to update it"
        case let .sessionGone(id): "session \(redacted(id)) is gone (removed or expired)"
        case let .leaseLapsed(id): "session \(redacted(id))'s lease lapsed before its holder wrote: the write was refused"
        case let .refreshTimedOut(id, after):
            "the upstream did not answer session \(redacted(id))'s refresh within \(after); its refresh token may be spent, so the session was ended"
        case let .refreshWaitTimedOut(id, after): "another instance's refresh of session \(redacted(id)) did not end within \(after)"
        case let .refreshUnconfirmed(id, reason):
            "session \(redacted(id))'s refresh token may be spent without a new one stored (\(reason)), so the session was ended"
        }
    }
}

extension StoredSession: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The key, the version and the data's size: the data may hold credentials.
    public var description: String { "StoredSession(id: \(id), version: \(version), \(data.count) bytes)" }
    /// The same as ``description``.
    public var debugDescription: String { description }
    /// A mirror without the data, so `dump` and reflection-based printers stay safe.
    public var customMirror: Mirror {
        Mirror(self, children: ["id": id, "version": version, "bytes": data.count], displayStyle: .struct)
    }
}

extension SessionBackendError: CustomDebugStringConvertible, CustomReflectable {
    /// The same as ``description``: the session ID shortened.
    public var debugDescription: String { description }
    /// A mirror of the ``description`` only, so `dump` never shows a whole session ID.
    public var customMirror: Mirror { Mirror(self, children: ["description": description], displayStyle: .enum) }
}

extension StoredSession {
    /// The key ``ServerSessions`` stores session `id` under: its SHA-256, base64url without
    /// padding (43 characters). For code that writes a backend directly, such as seeding known
    /// sessions in a test.
    public static func key(for id: String) -> String {
        Data(SHA256.hash(data: Data(id.utf8))).base64URL
    }
}

extension Data {
    /// Base64url (RFC 4648 §5) without padding.
    var base64URL: String {
        base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}

extension SessionBackendError {
    /// This error, naming session `id` where it names one (a backend names the key).
    func naming(_ id: String) -> Self {
        switch self {
        case let .versionConflict(_, expected, current): .versionConflict(id: id, expected: expected, current: current)
        case .duplicateID: .duplicateID(id)
        case let .undecodable(_, reason): .undecodable(id: id, reason: reason)
        case let .tooMuchContention(_, attempts): .tooMuchContention(id: id, attempts: attempts)
        case .sessionGone: .sessionGone(id: id)
        case .leaseLapsed: .leaseLapsed(id: id)
        case let .refreshTimedOut(_, after): .refreshTimedOut(id: id, after: after)
        case let .refreshWaitTimedOut(_, after): .refreshWaitTimedOut(id: id, after: after)
        case let .refreshUnconfirmed(_, reason): .refreshUnconfirmed(id: id, reason: reason)
        case .unavailable: self
        }
    }
}

/// A session ID as messages show it: its first characters only, since the ID is a credential.
func redacted(_ id: String) -> String { "\(id.prefix(6))…" }
