package import Foundation
package import Habitat

// How a save writes the accounts. Every signed-in account keeps its token in its own item,
// `tokenKey(forAccount:)`, the active one included; the index under `tokenKey` holds no secret:
// it names every item a crash may leave, and changes only when an account signs in or out. The
// snapshot names each account's token by its pairing identifier, and which account is active.
//
// A save reads, decides, then writes. `savePlan(for:stored:)` turns what the stack holds and
// what the store holds into the ordered writes (a pure function, tested without I/O), and
// `run(_:)` makes them. The order makes every crash safe (the reliability tests kill processes
// at random points):
//   1. the tokens of accounts signed out since the last save are deleted: a purged account
//      never comes back (their names stay in the index until step 4);
//   2. the index is written, listing every item a crash may leave (the old names and the new);
//      then the signed-out accounts' data is purged;
//   3. each account's new token beside its previous one in its item, then the snapshot: the
//      new state, naming the new tokens;
//   4. the previous tokens and the names no longer signed in are dropped from the items and
//      the index.
// A crash before the snapshot leaves the previous state with its tokens, after it the new one
// with its own. Each step names the crash its flush to disk guards against (`SaveStep.Flush`);
// the tidying of step 4 guards against none, and a file secret store doesn't flush its
// directory for it (a refresh's save: 5 flushes, not 6; `Benchmarks/syncs.sh`).

/// What a save read from the secret store before deciding anything.
package struct StoredTokens: Equatable {
    /// The index as stored (put back when a save that wrote new tokens fails).
    package var indexData: Data? { didSet { index = TokenRecord.decode(indexData) } }
    /// `indexData`, decoded.
    private(set) var index: TokenRecord?
    /// Each account of the environment being saved: its item as stored, by name.
    package var items: [String: Data?]
    /// The accounts whose token is the one the stack knows the store holds (the snapshot names
    /// the same pairs) and whose item can't be read now: kept as they are.
    var known: [String: TokenRecord.Entry] = [:]
    /// The pairs the saved snapshot names, by account: read only for an account that waits for
    /// its token, which keeps its pair.
    var snapshotPairs: [String: String] = [:]
    /// With a damaged index, the accounts the saved snapshot names: the items a save must still
    /// purge when they are signed out.
    var unindexed: Set<String> = []

    package init(indexData: Data?, items: [String: Data?] = [:]) {
        self.indexData = indexData
        self.items = items
        index = TokenRecord.decode(indexData)
    }
}

/// One write of a save, and what a failure of it means.
package struct SaveStep: Equatable {
    package enum Action: Equatable {
        /// Writes (or, with `nil`, deletes) an item of the secret store.
        case setSecret(key: String, Data?)
        /// Removes a signed-out account's data (`SessionStore.accountData(for:)`).
        case purgeData(account: String)
        /// Writes the snapshot: from here on the save is made.
        case setSnapshot(Data)
    }

    package enum OnFailure: Equatable {
        /// The save fails here; what was written stays.
        case abort
        /// A sign-out stands all the same: the save goes on and throws once the snapshot is written.
        case deferred
        /// What the save wrote is put back (each step's `undo`), then the save fails.
        case undoAndAbort
        /// Tidying: a failure is left for the next save or load.
        case ignore
        /// Tidying: a failure stops it, and the index keeps naming what is left.
        case stopTidying
    }

    /// The crash a step's flush to disk guards against: every step but a tidying one is on disk
    /// before the next runs. (A file store flushes each file it writes, and then its directory;
    /// a tidying write, only its file.)
    package enum Flush: Equatable {
        /// A signed-out account's token deleted, or its data purged: a crash must not bring it
        /// back beside a snapshot that no longer names the account.
        case signOut
        /// The index, naming every item a crash may leave: a load that doesn't find a stray
        /// token can't discard it.
        case index
        /// A new token, beside the previous one: the snapshot that names it must never reach the
        /// disk before it (the account would load signed out).
        case tokenBeforeSnapshot
        /// The snapshot, the save's commit point: a save that returned is never lost.
        case commit
        /// Tidying (a previous token dropped, the index trimmed): a crash may undo it, leaving
        /// what the next save or load tidies again; not made durable at once.
        case tidying
    }

    package var action: Action
    package var onFailure: OnFailure
    package var flush: Flush
    /// What to put back under this step's key when a later step fails `undoAndAbort`.
    package var undo: Data?? = nil
}

/// A save's writes in order, and what the store holds once they ran.
package struct SavePlan: Equatable {
    package var steps: [SaveStep]
    /// What the store holds once the snapshot is written.
    var known: KnownSession
}

extension SessionStore {
    /// Saves `environment`; returns what the store holds now (`nil` when it wrote nothing).
    /// `known` is what the stack knows the store holds, when the saved snapshot agrees: an
    /// account whose token is the known one and can't be read now (one behind Face ID) is kept
    /// without an unlock.
    func saveLocked(_ environment: HabitatEnvironment<App>, known: KnownSession? = nil) throws(SnapshotError) -> KnownSession? {
        // NB: an active session awaiting its token writes nothing: the saved snapshot and tokens
        // stay as they were until the tokens are read or the app says the store is readable.
        // Another account awaiting its token (one behind Face ID, say) keeps its stored item,
        // unread: the rest is saved.
        if SessionMachine.savesNothing(environment) { return nil }
        var stored: StoredTokens
        let accounts = environment.namedAccounts.filter { !SessionMachine<App>.keepsStoredItem($0.session) }
        do throws(StoreError) {
            stored = try storedTokens(for: accounts.map { ($0.name, $0.session.token.secret) }, known: known?.entries ?? [:])
        } catch {
            // NB: signing every account out stands even when the secrets can't be read (a
            // locked keychain): the snapshot says nobody is signed in, and a later load that
            // can delete them discards the tokens it no longer names.
            guard environment.accounts.isEmpty else { throw .store(error) }
            let snapshot = try encode(environment, pairID: nil)
            try SnapshotError.fromStore { () throws(StoreError) in try store.setData(snapshot, forKey: key) }
            throw .store(error)
        }
        if accounts.count != environment.namedAccounts.count { stored.snapshotPairs = try savedPairs() }
        guard let plan = try savePlan(for: environment, stored: stored, newPairID: pairIDs) else { return nil }
        return try SnapshotError.fromStore { () throws(StoreError) in try run(plan) }
    }

    /// The index and the items of `accounts` (name and token), with the index moved to today's
    /// layout first when an earlier version wrote it. An account whose item can't be read, and
    /// whose token is the one `known` says the store holds (the caller checked the snapshot
    /// names the same pairs), is kept as known.
    func storedTokens(for accounts: [(name: String, secret: String)], known: [String: TokenRecord.Entry] = [:]) throws(StoreError) -> StoredTokens {
        var stored: StoredTokens
        do throws(StoreError) {
            stored = StoredTokens(indexData: try secrets.secret(forKey: tokenKey))
        } catch where error.isDamagedItem {
            // NB: a damaged index (a link, a FIFO) names nothing: the saved snapshot's accounts
            // stand in for it, so that one signed out since still loses its token first.
            stored = StoredTokens(indexData: nil)
            stored.unindexed = pairs(in: try? savedPayload()).names
        }
        if let legacy = stored.index, !legacy.tokens.isEmpty {
            stored.indexData = try moveActiveToken(out: legacy)
        }
        for (name, secret) in accounts where stored.items[name] == nil && stored.known[name] == nil {
            // NB: a known account's item is read all the same (a process killed while signing it
            // out may have deleted it, the snapshot still naming it); the known pair stands in
            // only when the item can't be read now (behind Face ID, say).
            do throws(StoreError) {
                stored.items[name] = try secrets.secret(forKey: tokenKey(forAccount: name))
            } catch where error.isDamagedItem {
                // An item that can never be read as it is holds no token to keep: a sign-in
                // replaces it (it waited for its token, with nothing to wait for).
                stored.items[name] = .some(nil)
            } catch {
                guard let entry = known[name], entry.secret == secret else { throw error }
                stored.known[name] = entry
            }
        }
        return stored
    }

    /// Moves the active account's token out of the index, where versions before 0.2 kept it,
    /// into the account's own item: the item first, with the same entries (the saved snapshot's
    /// pair is found in either place), then the index without it. A crash between the two
    /// leaves the earlier layout, which loads as before and is moved by the next save.
    /// - Returns: The index as it is now.
    private func moveActiveToken(out legacy: TokenRecord) throws(StoreError) -> Data? {
        // NB: records written before they named the active account belong to the snapshot's.
        let snapshotUser = (try? store.data(forKey: key)).flatMap { try? decodePayload($0) }?.session?.user
        let name = legacy.account ?? snapshotUser.map(App.accountID(of:)) ?? ""
        try secrets.setSecret(TokenRecord(tokens: legacy.tokens).encoded(), forKey: tokenKey(forAccount: name))
        var items = (legacy.others ?? [:]).mapValues { _ in "" }
        items[name] = ""
        let moved = TokenRecord(tokens: [], others: items).encoded()
        try secrets.setSecret(moved, forKey: tokenKey)
        return moved
    }

    /// The writes that save `environment` over what the store holds (`stored`), in the order a
    /// crash needs; `nil` when nothing may be written (a store that never refreshes, asked to
    /// write a token it doesn't hold).
    package func savePlan(
        for environment: HabitatEnvironment<App>,
        stored: StoredTokens,
        newPairID: () -> String = { UUID().uuidString }
    ) throws(SnapshotError) -> SavePlan? {
        let accounts = environment.namedAccounts
        let activeName = environment.activeAccountID
        var pairs: [String: TokenRecord.Entry] = [:]
        var fresh: [(name: String, item: TokenRecord)] = []
        var untrimmed: [(name: String, entry: TokenRecord.Entry)] = []
        for (name, session) in accounts {
            if SessionMachine<App>.keepsStoredItem(session) {
                // Kept as stored, never read: nothing to save it with when the snapshot doesn't name it.
                guard let id = stored.snapshotPairs[name] else { return nil }
                pairs[name] = TokenRecord.Entry(id: id, secret: "")
                continue
            }
            if let entry = stored.known[name] {
                pairs[name] = entry
                continue
            }
            let item = TokenRecord.decode(stored.items[name] ?? nil)
            if let newest = item?.tokens.first, newest.secret == session.token.secret {
                pairs[name] = newest
                if item?.tokens.count != 1 { untrimmed.append((name, newest)) }
                continue
            }
            // A store that never refreshes (an extension's) writes no token it doesn't hold: an
            // older one would replay a rotated token, a newer one belongs to the app.
            guard refreshesTokens else { return nil }
            let entry = TokenRecord.Entry(id: newPairID(), secret: session.token.secret)
            // NB: every entry is kept until the snapshot names the new one: after a save that was
            // interrupted, the newest may be its unpaired token and the saved snapshot's the
            // next (keeping only the newest lost the account at the next interrupted save: the
            // session explorer found it).
            let previous = item?.tokens ?? []
            fresh.append((name, TokenRecord(tokens: [entry] + previous)))
            pairs[name] = entry
            if !previous.isEmpty { untrimmed.append((name, entry)) }
        }
        let listed = stored.index.map { Set(($0.others ?? [:]).keys) } ?? stored.unindexed
        let purged = listed.filter { pairs[$0] == nil }.sorted()
        // NB: a sign-out that writes no new token ends the session on disk even when a token
        // can't be deleted (a secrets directory made immutable): the snapshot is written all
        // the same, and the error thrown after it. A token no snapshot names signs nobody in,
        // and a later load that can delete it discards it.
        let beforeSnapshot: SaveStep.OnFailure = activeName == nil && fresh.isEmpty ? .deferred : .abort
        var steps = purged.map { SaveStep(action: .setSecret(key: tokenKey(forAccount: $0), nil), onFailure: beforeSnapshot, flush: .signOut) }
        // NB: the signed-out accounts stay listed until the save is made, so that one whose
        // data couldn't be purged is purged by the next save, or judged by the next load.
        let during = TokenRecord.index(naming: listed.union(pairs.keys))
        if during != stored.index {
            let undo: Data?? = fresh.isEmpty ? nil : .some(stored.indexData)
            steps.append(SaveStep(action: .setSecret(key: tokenKey, during.encodedUnlessEmpty), onFailure: beforeSnapshot, flush: .index, undo: undo))
        }
        steps += purged.map { SaveStep(action: .purgeData(account: $0), onFailure: .abort, flush: .signOut) }
        steps += fresh.map { name, item in
            SaveStep(action: .setSecret(key: tokenKey(forAccount: name), item.encoded()), onFailure: .undoAndAbort, flush: .tokenBeforeSnapshot, undo: .some(stored.items[name] ?? nil))
        }
        var others = pairs
        if let activeName { others[activeName] = nil }
        let snapshot = try encode(environment, pairID: activeName.flatMap { pairs[$0]?.id }, others: others.mapValues(\.id))
        steps.append(SaveStep(action: .setSnapshot(snapshot), onFailure: .undoAndAbort, flush: .commit))
        steps += untrimmed.map {
            SaveStep(action: .setSecret(key: tokenKey(forAccount: $0.name), TokenRecord(tokens: [$0.entry]).encoded()), onFailure: .ignore, flush: .tidying)
        }
        let final = TokenRecord.index(naming: Set(pairs.keys))
        if final != during { steps.append(SaveStep(action: .setSecret(key: tokenKey, final.encodedUnlessEmpty), onFailure: .stopTidying, flush: .tidying)) }

        let active = activeName.flatMap { pairs[$0] }
        return SavePlan(steps: steps, known: KnownSession(pairID: active?.id, secret: active?.secret, others: others, active: activeName))
    }

    /// Makes `plan`'s writes in order; returns what the store holds after them.
    func run(_ plan: SavePlan) throws(StoreError) -> KnownSession {
        var undo: [(key: String, data: Data?)] = []
        var deferred: StoreError?
        for step in plan.steps {
            do throws(StoreError) {
                switch step.action {
                case .setSecret(let key, let data):
                    if let previous = step.undo { undo.append((key, previous)) }
                    if step.flush == .tidying, let secrets = secrets as? any TidyingSecretStore {
                        try secrets.setSecretTidying(data, forKey: key)
                    } else {
                        try secrets.setSecret(data, forKey: key)
                    }
                case .purgeData(let account):
                    try accountData(for: account).removeAll()
                case .setSnapshot(let data):
                    try store.setData(data, forKey: key)
                }
            } catch {
                switch step.onFailure {
                case .abort: throw error
                case .deferred: deferred = deferred ?? error
                case .undoAndAbort:
                    // Best effort; a crash here leaves tokens no snapshot names, which the next
                    // load discards, or the previous state with its own tokens.
                    for (key, data) in undo.reversed() { try? secrets.setSecret(data, forKey: key) }
                    throw error
                case .ignore: continue
                case .stopTidying: return plan.known
                }
            }
            if case .setSnapshot = step.action, let deferred { throw deferred }
        }
        return plan.known
    }
}

extension HabitatEnvironment {
    /// The signed-in accounts by name, the active one first, the first of a name kept.
    var namedAccounts: [(name: String, session: UserSession<App.User>)] {
        var seen: Set<String> = []
        return accounts.compactMap { session in
            let name = App.accountID(of: session.user)
            return seen.insert(name).inserted ? (name, session) : nil
        }
    }
}
