// Saves from a stack that missed a change: another process (or another stack on the same store)
// logged out, logged in, or rotated the token since this stack last saved or restored. Such a
// save never undoes that change: it writes its configuration beside the stored session, and
// the stack takes the stored session.

/// What a stack knows the store holds: the pair (snapshot and token record entry) it last saved
/// or restored, and that pair's token. `pairID` and `secret` are `nil` for "logged out".
struct KnownSession: Sendable, Equatable {
    var pairID: String?
    var secret: String?
}

/// What a knowing save did.
enum SaveOutcome<App: EnvironmentSchema>: Sendable {
    /// Saved as asked; the store holds `now`.
    case saved(now: KnownSession?)
    /// The stack's session was one the store had moved past; the configuration was saved with
    /// the stored session, which the stack should take.
    case adopted(UserSession<App.User>?, now: KnownSession)
}

extension SessionStore {
    /// Saves `environment` as ``save(_:)`` does, unless the store changed since `known`: then
    /// the store's session stays, and only the configuration is written.
    func save(_ environment: HabitatEnvironment<App>, known: KnownSession?) throws(SnapshotError) -> SaveOutcome<App> {
        try lock.withLock { () throws(SnapshotError) -> SaveOutcome<App> in
            if let known, environment.session?.state != .awaitingToken, let stored = try storedPairIfMovedPast(known, by: environment) {
                let snapshot = try loadLocked(secretsReadable: true)
                var merged = environment
                merged.session = snapshot?.session
                let data = try encode(merged, pairID: stored.pairID)
                do throws(StoreError) {
                    try store.setData(data, forKey: key)
                } catch {
                    throw .store(error)
                }
                return .adopted(snapshot?.session, now: stored)
            }
            return .saved(now: try saveLocked(environment))
        }
    }

    /// The pair the store holds, when it is not the one `known` names and the environment's
    /// session is still the known one (a new login or refresh here is this stack's own change,
    /// and is saved). `nil` when the save may go ahead.
    private func storedPairIfMovedPast(_ known: KnownSession, by environment: HabitatEnvironment<App>) throws(SnapshotError) -> KnownSession? {
        let stored = try storedPairLocked()
        guard stored.pairID != known.pairID else { return nil }
        if let session = environment.session {
            // The stack's session is the one it knew, and the store holds another (or none).
            return session.token.secret == known.secret ? stored : nil
        }
        // A logout here: the store holds a session this stack never saw (a login elsewhere).
        return stored.pairID == nil ? nil : stored
    }

    /// The pair the store holds now: the token record's newest entry, without a full load.
    func storedPair() throws(SnapshotError) -> KnownSession {
        try lock.withLock { () throws(SnapshotError) -> KnownSession in try storedPairLocked() }
    }

    private func storedPairLocked() throws(SnapshotError) -> KnownSession {
        do throws(StoreError) {
            let newest = TokenRecord.decode(try secrets.secret(forKey: tokenKey))?.tokens.first
            return KnownSession(pairID: newest?.id, secret: newest?.secret)
        } catch {
            throw .store(error)
        }
    }
}
