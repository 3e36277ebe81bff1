// Saves from a stack that missed a change: another process (or another stack on the same store)
// logged out, logged in, or rotated the token since this stack last saved or restored. Such a
// save never undoes that change: it writes its configuration beside the stored session, and
// the stack takes the stored session.

/// What a stack knows the store holds: the pair (snapshot and token record entry) it last saved
/// or restored, and that pair's token. `pairID` and `secret` are `nil` for "logged out".
struct KnownSession: Sendable, Equatable {
    var pairID: String?
    var secret: String?
    /// The other signed-in accounts' pairs, by account name (a pair read from the token record
    /// alone has an empty `secret`).
    var others: [String: TokenRecord.Entry] = [:]

    /// Whether `other` names the same pairs: what the store comparisons look at.
    func samePairs(_ other: KnownSession?) -> Bool {
        guard let other else { return false }
        return pairID == other.pairID && others.mapValues(\.id) == other.others.mapValues(\.id)
    }
}

/// What a knowing save did.
enum SaveOutcome<App: EnvironmentSchema>: Sendable {
    /// Saved as asked; the store holds `now`.
    case saved(now: KnownSession?)
    /// The stack's session was one the store had moved past; the configuration was saved with
    /// the stored session, which the stack should take.
    case adopted(UserSession<App.User>?, others: [UserSession<App.User>], now: KnownSession)
}

extension SessionStore {
    /// Saves `environment` as ``save(_:)`` does, unless the store changed since `known`: then
    /// the store's session stays, and only the configuration is written.
    func save(_ environment: HabitatEnvironment<App>, known: KnownSession?) throws(SnapshotError) -> SaveOutcome<App> {
        try lock.withLock { () throws(SnapshotError) -> SaveOutcome<App> in
            guard let known, environment.session?.state != .awaitingToken else { return .saved(now: try saveLocked(environment)) }
            let stored = try storedPairLocked()
            if stored.samePairs(known) { return .saved(now: try saveLocked(environment)) }
            if movedPast(known, stored: stored, by: environment) {
                let snapshot = try loadLocked(secretsReadable: true)
                var merged = environment
                merged.session = snapshot?.session
                merged.otherAccounts = snapshot?.otherAccounts ?? []
                let data = try encode(merged, pairID: stored.pairID, others: stored.others.mapValues(\.id))
                do throws(StoreError) {
                    try store.setData(data, forKey: key)
                } catch {
                    throw .store(error)
                }
                return .adopted(merged.session, others: merged.otherAccounts, now: snapshot?.known ?? stored)
            }
            // This stack's own change is saved; but an other account it didn't touch, signed out
            // or renewed elsewhere meanwhile, is taken as the store has it, never saved back.
            let snapshot = try loadLocked(secretsReadable: true)
            var merged = environment
            merged.otherAccounts = environment.otherAccounts.compactMap { other in
                let name = App.accountID(of: other.user)
                guard let knew = known.others[name], knew.secret == other.token.secret, stored.others[name]?.id != knew.id else { return other }
                return snapshot?.otherAccounts.first { App.accountID(of: $0.user) == name }
            }
            let now = try saveLocked(merged)
            guard merged.otherAccounts.map(\.token) != environment.otherAccounts.map(\.token) else { return .saved(now: now) }
            return .adopted(merged.session, others: merged.otherAccounts, now: now ?? stored)
        }
    }

    /// Whether the store moved past what the stack knew while the stack itself changed nothing
    /// (its active token and its other accounts' are the ones it knew), or the stack logged
    /// everyone out while the store signed someone in it never saw.
    private func movedPast(_ known: KnownSession, stored: KnownSession, by environment: HabitatEnvironment<App>) -> Bool {
        let others = Dictionary(environment.otherAccounts.map { (App.accountID(of: $0.user), $0.token.secret) }, uniquingKeysWith: { first, _ in first })
        if environment.session == nil, others.isEmpty {
            return stored.pairID != nil && stored.pairID != known.pairID
        }
        return environment.session?.token.secret == known.secret && others == known.others.mapValues(\.secret)
    }

    /// The pair the store holds now: the token record's newest entry, without a full load.
    func storedPair() throws(SnapshotError) -> KnownSession {
        try lock.withLock { () throws(SnapshotError) -> KnownSession in try storedPairLocked() }
    }

    private func storedPairLocked() throws(SnapshotError) -> KnownSession {
        do throws(StoreError) {
            let record = TokenRecord.decode(try secrets.secret(forKey: tokenKey))
            let newest = record?.tokens.first
            return KnownSession(pairID: newest?.id, secret: newest?.secret, others: (record?.others ?? [:]).mapValues { .init(id: $0, secret: "") })
        } catch {
            throw .store(error)
        }
    }
}
