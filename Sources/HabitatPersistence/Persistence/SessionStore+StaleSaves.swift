import Foundation
import Habitat

// Saves from a stack that missed a change: another process (or another stack on the same store)
// logged out, logged in, or rotated the token since this stack last saved or restored. Such a
// save never undoes that change: it writes its configuration beside the stored session, and
// the stack takes the stored session.

/// What a stack knows the store holds: the pairs (the snapshot's, each naming an entry of an
/// account's token item) it last saved or restored, and the active pair's token. `pairID` and
/// `secret` are `nil` for "logged out".
struct KnownSession: Sendable, Equatable {
    var pairID: String?
    var secret: String?
    /// The other signed-in accounts' pairs, by account name (a pair read from the snapshot alone
    /// has an empty `secret`).
    var others: [String: TokenRecord.Entry] = [:]
    /// The active account's name; `nil` when none is active.
    var active: String?

    /// Whether `other` names the same pairs, and, when it knows the active token, this holds it
    /// too: what the store comparisons look at. (A process killed while signing the active
    /// account out may have deleted its token and left the snapshot naming it: signed out.)
    func samePairs(_ other: KnownSession?) -> Bool {
        guard let other else { return false }
        return pairID == other.pairID && others.mapValues(\.id) == other.others.mapValues(\.id)
            && (other.secret == nil || secret == other.secret)
    }

    /// Whether an account named `name` is signed in, active or not.
    func holds(_ name: String) -> Bool { active == name || others[name] != nil }

    /// Every signed-in account's name, the active one's included.
    var names: Set<String> { Set(others.keys).union(active.map { [$0] } ?? []) }

    /// Every account's pair the stack knows with its token, by name, the active one's included.
    var entries: [String: TokenRecord.Entry] {
        var entries = others
        if let active, let pairID, let secret { entries[active] = TokenRecord.Entry(id: pairID, secret: secret) }
        return entries
    }

    /// The pairing identifiers: the active account's, then the others' by name.
    var pairs: [String?] { [pairID] + others.sorted { $0.key < $1.key }.map { Optional($0.value.id) } }
}

// NB: it holds the token, and a `SessionSnapshot` holds it: no printing path (`print`,
// `dump`, `String(reflecting:)`, a `Mirror` walk) may show more than which pairs it names.
extension KnownSession: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    var description: String { "KnownSession(<redacted>)" }
    var debugDescription: String { description }
    var customMirror: Mirror {
        Mirror(self, children: ["pairID": pairID as Any, "accounts": others.keys.sorted(), "active": active as Any], displayStyle: .struct)
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
    /// Saves `environment` as `save(_:)` does, unless the store changed since `known`: then,
    /// when the stack changed nothing since, the store's accounts stay and only the
    /// configuration is written; when it did, the two are merged account by account.
    func save(_ environment: HabitatEnvironment<App>, known: KnownSession?) throws(SnapshotError) -> SaveOutcome<App> {
        try lock.withLock { () throws(SnapshotError) -> SaveOutcome<App> in
            guard let known, SessionMachine<App>.comparesWithStore(environment, known: known) else {
                return .saved(now: try saveLocked(environment))
            }
            let stored: KnownSession
            do throws(SnapshotError) {
                stored = try storedPairLocked()
            } catch {
                // The secrets can't be read (a locked keychain).
                let saved = try? savedPayload().map { pairs(in: $0).pairs }
                guard SessionMachine<App>.signOutStands(environment, known: known, savedPairs: saved) else { throw error }
                return .saved(now: try saveLocked(environment))
            }
            switch SessionMachine<App>.saveRoute(environment, known: known, stored: stored) {
            case .asAsked:
                return .saved(now: try saveLocked(environment, known: known))
            case .takeStored:
                let snapshot = try loadLocked(secretsReadable: true)
                var taken = environment
                taken.setAll(active: snapshot?.session, others: snapshot?.otherAccounts ?? [])
                let data = try encode(taken, pairID: stored.pairID, others: stored.others.mapValues(\.id))
                try SnapshotError.fromStore { () throws(StoreError) in try store.setData(data, forKey: key) }
                return .adopted(taken.session, others: taken.otherAccounts, now: snapshot?.known ?? stored)
            case .merge:
                let snapshot = try loadLocked(secretsReadable: true)
                let merged = SessionMachine<App>.merged(environment, known: known, stored: snapshot?.known ?? stored, snapshot: snapshot)
                let now = try saveLocked(merged)
                guard SessionMachine<App>.mergeMoves(merged, from: environment) else { return .saved(now: now) }
                return .adopted(merged.session, others: merged.otherAccounts, now: now ?? stored)
            }
        }
    }

    /// The pairs the store holds now, read from the snapshot, without a full load.
    func storedPair() throws(SnapshotError) -> KnownSession {
        try lock.withLock { () throws(SnapshotError) -> KnownSession in try storedPairLocked() }
    }

    /// The saved snapshot's payload; `nil` when nothing is saved.
    func savedPayload() throws(SnapshotError) -> Payload? {
        guard let data = try SnapshotError.fromStore({ () throws(StoreError) in try store.data(forKey: key) }) else { return nil }
        return try decodePayload(data)
    }

    /// The pair of each account the saved snapshot names, by name.
    func savedPairs() throws(SnapshotError) -> [String: String] {
        pairs(in: try savedPayload()).entries.mapValues(\.id)
    }

    /// The pairs `payload` names, by account, no token read (but the others' entries' secrets
    /// are empty, and the active one's is `nil`).
    func pairs(in payload: Payload?) -> KnownSession {
        var known = KnownSession(pairID: payload?.session?.pairID, secret: nil, active: payload?.session.map { App.accountID(of: $0.user) })
        for saved in payload?.accounts ?? [] {
            known.others[saved.account ?? App.accountID(of: saved.user)] = TokenRecord.Entry(id: saved.pairID ?? "", secret: "")
        }
        return known
    }

    /// What the store holds now: the pairs the saved snapshot names (the commit point of every
    /// save), with the active account's token read from its item.
    private func storedPairLocked() throws(SnapshotError) -> KnownSession {
        var known = pairs(in: try savedPayload())
        // NB: an account whose item is gone is signed out, though the snapshot names it (a
        // process killed while signing it out deletes its token first); one whose item can't be
        // read now (behind Face ID) is taken as named.
        for (name, entry) in known.others {
            let item: Data?
            do throws(StoreError) {
                item = try secrets.secret(forKey: tokenKey(forAccount: name))
            } catch {
                continue
            }
            if TokenRecord.decode(item)?.tokens.contains(where: { $0.id == entry.id }) != true { known.others[name] = nil }
        }
        guard let active = known.active, let pairID = known.pairID else { return known }
        let item: Data?
        do throws(StoreError) {
            item = try secrets.secret(forKey: tokenKey(forAccount: active))
        } catch where error.isDamagedItem {
            item = nil   // an item that can never be read as it is (a link, a FIFO) holds no token
        } catch {
            throw .store(error)
        }
        known.secret = TokenRecord.decode(item)?.tokens.first { $0.id == pairID }?.secret
        if known.secret == nil {
            // NB: in the layout before 0.2, the active token is in the index (the item was just
            // read: an index that can't be read is a damaged one, and holds none).
            known.secret = TokenRecord.decode(try? secrets.secret(forKey: tokenKey))?.tokens.first { $0.id == pairID }?.secret
        }
        return known
    }
}
