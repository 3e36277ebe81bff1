import Foundation
import Habitat

// How a save writes the accounts: the active one's token under `tokenKey`, each other account's
// under `tokenKey(forAccount:)`, the snapshot naming every token by its pairing identifier.
//
// The order makes every crash safe (the reliability tests kill processes at random points):
//   1. the tokens of accounts signed out since the last save are deleted: a purged account
//      never comes back (their names stay listed in the record until step 4);
//   2. the record under `tokenKey` is written, listing every item a crash may leave (the old
//      names and the new) and the active account's new token beside its previous one (or no
//      token, after a logout); then the signed-out accounts' data is purged;
//   3. each other account's new token beside the previous one in its item, then the snapshot:
//      the new state, naming the new tokens;
//   4. the previous tokens, the items of accounts that left the others, and the names no
//      longer signed in are dropped from the record.
// A crash before the snapshot leaves the previous state with its tokens, after it the new one
// with its own.
extension SessionStore {
    /// Saves `environment`; returns what the store holds now (`nil` when it wrote nothing).
    func saveLocked(_ environment: HabitatEnvironment<App>) throws(SnapshotError) -> KnownSession? {
        do {
            // NB: a session awaiting its token writes nothing: the saved snapshot and tokens stay
            // as they were until the tokens are read or the app says the store is readable.
            if environment.isAwaitingToken {
                return nil
            }
            let storedData: Data?
            do throws(StoreError) {
                storedData = try secrets.secret(forKey: tokenKey)
            } catch {
                // NB: signing every account out stands even when the secrets can't be read (a
                // locked keychain): the snapshot says nobody is signed in, and a later load that
                // can delete them discards the tokens it no longer names.
                guard environment.session == nil, environment.otherAccounts.isEmpty else { throw error }
                try store.setData(try encode(environment, pairID: nil, others: [:]), forKey: key)
                throw error
            }
            let stored = TokenRecord.decode(storedData)
            let storedIndex = stored?.others ?? [:]
            let activeName = environment.session.map { App.accountID(of: $0.user) }
            // The other accounts by name, the first of a name kept; each one's item as stored,
            // and its newest entry when that is the account's token already.
            var others: [String: UserSession<App.User>] = [:]
            var items: [String: Data?] = [:]
            var keptOthers: [String: TokenRecord.Entry] = [:]
            for other in environment.otherAccounts {
                let name = App.accountID(of: other.user)
                guard name != activeName, others[name] == nil else { continue }
                others[name] = other
                items[name] = try secrets.secret(forKey: tokenKey(forAccount: name))
                if let newest = TokenRecord.decode(items[name] ?? nil)?.tokens.first, newest.secret == other.token.secret {
                    keptOthers[name] = newest
                }
            }
            let activeKept = stored?.tokens.first.flatMap { $0.secret == environment.session?.token.secret ? $0 : nil }
            // A store that never refreshes (an extension's) writes no token it doesn't hold: an
            // older one would replay a rotated token, a newer one belongs to the app.
            if !refreshesTokens, (environment.session != nil && activeKept == nil) || keptOthers.count != others.count {
                return nil
            }
            let signedOut = stored?.account.flatMap { $0 == activeName || others[$0] != nil ? nil : $0 }
            let purged = Set(storedIndex.keys.filter { $0 != activeName && others[$0] == nil } + (signedOut.map { [$0] } ?? []))
            // NB: a sign-out that writes no new token ends the session on disk even when a token
            // can't be deleted (a secrets directory made immutable): the snapshot is written all
            // the same, and the error thrown after it. A token no snapshot names signs nobody in,
            // and a later load that can delete it discards it.
            let signOutStands = environment.session == nil && others.keys.allSatisfy { keptOthers[$0] != nil }
            var deferred: StoreError?
            func deferringFailure(_ body: () throws(StoreError) -> Void) throws(StoreError) {
                do { try body() } catch where signOutStands { deferred = deferred ?? error }
            }

            // 1. Signed out here: the tokens go first, and stay gone.
            for name in purged where storedIndex[name] != nil {
                try deferringFailure { () throws(StoreError) in try secrets.setSecret(nil, forKey: tokenKey(forAccount: name)) }
            }

            // 2. New tokens beside the previous ones: the record under `tokenKey` first, so that
            // it lists every item before the item is written.
            var index = keptOthers
            var fresh: [(name: String, record: TokenRecord)] = []
            // The items that will hold more than their one entry until step 4.
            var untrimmed = keptOthers.filter { TokenRecord.decode(items[$0.key] ?? nil)?.tokens.count != 1 }
            for (name, other) in others where keptOthers[name] == nil {
                let entry = TokenRecord.Entry(id: UUID().uuidString, secret: other.token.secret)
                let previous = TokenRecord.decode(items[name] ?? nil)?.tokens.first.map { [$0] } ?? []
                fresh.append((name, TokenRecord(tokens: [entry] + previous)))
                index[name] = entry
                if !previous.isEmpty { untrimmed[name] = entry }
            }
            let active = activeKept ?? environment.session.map { TokenRecord.Entry(id: UUID().uuidString, secret: $0.token.secret) }
            let activeTokens: [TokenRecord.Entry]
            if environment.session == nil {
                // NB: a logout's token goes before the snapshot, and is not put back when the
                // snapshot can't be written: a snapshot whose token is gone restores logged out.
                activeTokens = []
            } else if activeKept != nil {
                activeTokens = stored?.tokens ?? []
            } else {
                activeTokens = (active.map { [$0] } ?? []) + (stored?.tokens.first.map { [$0] } ?? [])
            }
            let pairs = index.mapValues(\.id)
            // NB: the signed-out accounts stay listed until the save is made, so that one whose
            // data couldn't be purged is purged by the next save, or judged by the next load.
            var during = storedIndex.merging(pairs) { _, new in new }
            for name in purged where during[name] == nil { during[name] = "" }
            let accountName = activeName.flatMap { $0.isEmpty ? nil : $0 }
            let record = TokenRecord(tokens: activeTokens, others: during, account: accountName)
            let snapshot = try encode(environment, pairID: active?.id, others: pairs)
            var undo: [(key: String, data: Data?)] = []
            if record != stored {
                try deferringFailure { () throws(StoreError) in try secrets.setSecret(record.isEmpty ? nil : record.encoded(), forKey: tokenKey) }
                if environment.session != nil, activeKept == nil || !fresh.isEmpty { undo.append((tokenKey, storedData)) }
            }
            // The signed-out accounts' data, once no token of theirs is left (an active account's
            // went with the record): a store that refuses fails the save, the sign-out stands.
            for name in purged { try accountData(for: name).removeAll() }

            // 3. The other accounts' new items, then the snapshot. When either can't be written,
            // what was written is put back (best effort; a crash here leaves tokens no snapshot
            // names, which the next load discards, or the previous state with its own tokens).
            do throws(StoreError) {
                for (name, item) in fresh {
                    undo.append((tokenKey(forAccount: name), items[name] ?? nil))
                    try secrets.setSecret(item.encoded(), forKey: tokenKey(forAccount: name))
                }
                try store.setData(snapshot, forKey: key)
            } catch {
                for (key, data) in undo.reversed() { try? secrets.setSecret(data, forKey: key) }
                throw error
            }
            if let deferred { throw deferred }

            // 4. What the previous state needed and the new one doesn't. Best effort: the save
            // is made; when a removal fails, the record keeps naming what is left, and the next
            // load discards it.
            var cleaned = true
            for (name, entry) in untrimmed { try? secrets.setSecret(TokenRecord(tokens: [entry]).encoded(), forKey: tokenKey(forAccount: name)) }
            for name in storedIndex.keys where index[name] == nil && !purged.contains(name) {
                do throws(StoreError) { try secrets.setSecret(nil, forKey: tokenKey(forAccount: name)) } catch { cleaned = false }
            }
            let final = TokenRecord(tokens: active.map { [$0] } ?? [], others: pairs, account: accountName)
            if cleaned, final != record, (try? secrets.setSecret(final.isEmpty ? nil : final.encoded(), forKey: tokenKey)) != nil {
                return KnownSession(pairID: active?.id, secret: active?.secret, others: index, active: activeName)
            }
            let listed = (record.others ?? [:]).mapValues { TokenRecord.Entry(id: $0, secret: "") }
            return KnownSession(pairID: active?.id, secret: active?.secret, others: listed.merging(index) { _, kept in kept }, active: activeName)
        } catch let error as SnapshotError {
            throw error
        } catch let error as StoreError {
            throw .store(error)
        } catch {
            throw .store(.encodingFailed(key: key, reason: describe(error)))
        }
    }

}
