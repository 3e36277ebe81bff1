public import Foundation
public import Habitat

/// Saves the session part of an environment (user, auth state, token expiry, configuration)
/// as a versioned snapshot, with the token kept apart in a ``SecretStore``.
///
/// ```swift
/// let sessions = SessionStore<AppSchema>(
///     store: try JSONFileStore(url: dataDirectory.appendingPathComponent("session.json")),
///     secrets: try FileSecretStore(directory: dataDirectory.appendingPathComponent("secrets")),
///     version: 2,
///     migrations: [SnapshotMigration(from: 1) { try renameField(in: $0) }]
/// )
/// appEnvironment.restoreAtLaunch(from: sessions)   // at launch
/// appEnvironment.enableAutosave(to: sessions)       // from then on
/// ```
///
/// The snapshot is JSON under `key` in the plain store; each signed-in account's token is under
/// `"\(key).token.NAME"` in the secret store (`NAME` being the account's
/// `EnvironmentSchema.accountID(of:)`, empty by default) and nowhere else. `"\(key).token"` is the
/// index: it names every account's item, and holds no secret. With
/// several accounts signed in, the snapshot holds them all and says which is active.
///
/// Several processes (an app and its extensions) and several stacks may share one session
/// store: saves and loads take turns on an advisory lock on `lockFile`, held only while they
/// read or write; refreshes of an account take turns by a lease beside it (the same path with
/// `.refresh` appended, and `.NAME` for an account with a name: the holder's process and a
/// deadline), so that only one of them asks the server at a time and the others use the token
/// it got. No lock is held while the server is asked.
public struct SessionStore<App: EnvironmentSchema>: Sendable {
    /// Where the snapshot goes.
    public let store: any KeyValueStore
    /// Where the token goes.
    public let secrets: any SecretStore
    /// The snapshot's key in `store`; the tokens' index in `secrets` is `"\(key).token"`, each
    /// account's token `"\(key).token.NAME"`.
    public let key: String
    /// The snapshot version this app writes, and the newest it reads.
    public let version: Int
    /// The file whose advisory lock the users of this store take turns on, in every process;
    /// `nil` when only this process's users of this value take turns.
    public let lockFile: URL?
    /// Whether a load deletes a token that no saved snapshot names (see `load()`).
    public let discardsUnpairedSecrets: Bool
    /// Whether stacks saving here may refresh the session. `false` for an app extension that
    /// shares the app's session but leaves rotating its token to the app: its
    /// ``Habitat/EnvironmentStack/refreshSession(account:isolation:fileID:line:using:)`` only takes a token the
    /// app saved, and its saves never write a token the store doesn't already hold (an older
    /// one, or one from a login made there: sign in from the app). A logout is saved.
    public let refreshesTokens: Bool
    /// Where each account's own data lives, one namespace per account (see
    /// `accountData(for:)`).
    public let accountDataStore: any KeyValueStore
    let migrations: [Int: SnapshotMigration]
    /// The lock and the refresh leases (the session explorer gives its own a pause it controls).
    var lock: SessionLock
    /// Makes each new token's pairing identifier: random, but for the session explorer's replays,
    /// which count, so that a replayed trace writes the same bytes.
    package var pairIDs: @Sendable () -> String = { UUID().uuidString }

    /// Creates a session store.
    /// - Parameters:
    ///   - store: Where the snapshot goes.
    ///   - secrets: Where the token goes.
    ///   - key: The snapshot's key; `"habitat.session"` by default.
    ///   - version: The snapshot version this app writes; 1 by default. Raise it when `User` or
    ///     `Config` change shape, and register a migration from the previous version.
    ///   - migrations: Migrations that move older snapshots forward, one version at a time.
    ///   - lockFile: The file the processes sharing this store lock while they save or load, and
    ///     beside which a refresh's lease is kept. By default, for a ``JSONFileStore``, its file's path with `.session-lock`
    ///     appended; for other stores, none: pass one in a directory every process can reach
    ///     (an app group's container) when several processes share the store.
    ///   - discardsUnpairedSecrets: Whether a load deletes a token that no saved snapshot names,
    ///     such as one a Keychain kept after the app was deleted and reinstalled. `true` by
    ///     default; such a token is never used either way.
    ///   - refreshesTokens: Whether stacks saving here may refresh the session; `true` by
    ///     default. Pass `false` in an app extension that shares the app's session: it then
    ///     waits for the app to rotate the token (see <doc:PersistenceAndSessions>).
    ///   - accountData: Where `accountData(for:)` keeps each account's data; `store` by
    ///     default.
    ///   - refreshLease: How long a refresh may hold its lease beside `lockFile`; a minute by
    ///     default, and bounded to a second .. a day (a zero lease lapsed before any answer
    ///     came). A refresh that outlives it ends the session rather than keep a token it may
    ///     have spent (see `refreshSession(account:using:)`).
    public init(
        store: any KeyValueStore,
        secrets: any SecretStore,
        key: String = "habitat.session",
        version: Int = 1,
        migrations: [SnapshotMigration] = [],
        lockFile: URL? = nil,
        discardsUnpairedSecrets: Bool = true,
        refreshesTokens: Bool = true,
        accountData: (any KeyValueStore)? = nil,
        refreshLease: Duration = .seconds(60)
    ) {
        self.store = store
        self.secrets = secrets
        self.key = key
        self.version = version
        self.migrations = Dictionary(migrations.map { ($0.from, $0) }, uniquingKeysWith: { _, last in last })
        let lockFile = lockFile ?? (store as? JSONFileStore).map { URL(fileURLWithPath: $0.url.path + ".session-lock") }
        self.lockFile = lockFile
        self.discardsUnpairedSecrets = discardsUnpairedSecrets
        self.refreshesTokens = refreshesTokens
        self.accountDataStore = accountData ?? store
        lock = SessionLock(path: lockFile?.path, leaseDuration: min(max(refreshLease, .seconds(1)), .seconds(86_400)))
    }

    /// A session store that keeps everything in memory, for tests and previews.
    ///
    /// Public because previews are app code: a preview's services save sessions here and
    /// nothing reaches the disk.
    /// - Returns: A store over a new ``InMemoryStore`` and ``InMemorySecretStore``.
    public static func inMemory() -> Self {
        SessionStore(store: InMemoryStore(), secrets: InMemorySecretStore())
    }

    /// The key in `secrets` of the index: the name of every account's item, no secret.
    /// (Before 0.2 it held the active account's token too.)
    package var tokenKey: String { key + ".token" }

    /// The key in `secrets` of a signed-in account's token, active or not:
    /// `"\(tokenKey).\(name)"`, `name` being the account's (`EnvironmentSchema.accountID(of:)`).
    package func tokenKey(forAccount name: String) -> String { tokenKey + "." + name }

    /// Runs `body` while no other save, load or user of this store's lock runs, in any process.
    package func withSessionLock<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        try lock.withLock(body)
    }

    /// The namespace of one signed-in account's own data (drafts, caches, settings): a save
    /// that finds the account signed out, by `EnvironmentStack.logout(account:)`,
    /// `EnvironmentStack.logoutAll()`, a logout or a login of another user,
    /// removes it.
    ///
    /// ```swift
    /// let drafts = sessions.accountData(for: "ada")
    /// try drafts.set(draft, for: .currentDraft)
    /// ```
    /// - Parameter name: The account's name (`EnvironmentSchema.accountID(of:)`).
    /// - Returns: `accountDataStore` scoped to `"\(key).account.\(name)"`.
    public func accountData(for name: String) -> ScopedStore {
        accountDataStore.scoped(to: key + ".account." + name)
    }

    // MARK: Saving

    /// Saves the session and configuration of `environment`.
    ///
    /// The snapshot and the token are one pair: the snapshot names the token it belongs with by
    /// a pairing identifier, and `load()` uses a token only with the snapshot that names it. A
    /// save that changes the token writes the secret store first, keeping the previous token
    /// beside the new one, then the snapshot, then drops the previous token. A crash at any
    /// point leaves the previous session or the new one, each with its own token, and never one
    /// user's snapshot with another save's token. A save that keeps the token writes only the
    /// snapshot. Signing an account out deletes its token first, so a crash leaves that account
    /// signed out and its token off the disk: a logout, and a login that replaces the signed-in
    /// account (someone else signed in), whose crash leaves the new session or nobody signed in,
    /// never the replaced account back. The token never goes into the plain store.
    ///
    /// A save that fails leaves the stores as they were, but for the accounts it signs out: when
    /// the snapshot can't be written after a new token was, the previous token is put back (a
    /// login's new token is not left beside the old one); the token of an account signed out
    /// since the last save (by a logout, or by a login that replaced it) stays deleted, and a
    /// snapshot whose token is gone restores logged out.
    ///
    /// Other signed-in accounts (`HabitatEnvironment.otherAccounts`) are saved in the same
    /// snapshot, which records which account is active; each account keeps its token in its own
    /// item, `"\(key).token.NAME"`, paired the same way, and a switch writes no token. An
    /// account signed out since the last save loses its token first, then its namespace of
    /// `accountData(for:)`, and only then is the snapshot written. A store written by 0.1.0
    /// (the active account's token in the index) is moved to this layout by its first save.
    ///
    /// A session `AuthState.awaitingToken` (restored while the secret store couldn't be read,
    /// or couldn't be trusted to say "not found") writes nothing: the saved snapshot and token
    /// stay as they were until the token is read.
    ///
    /// A store made with `refreshesTokens: false` (an extension's) never writes a token the
    /// secret store doesn't already hold: when the app has rotated the token or logged out
    /// (or the extension logged someone in), such a save does nothing.
    ///
    /// - Parameter environment: The environment whose session and config to save.
    /// - Throws: ``SnapshotError/store(_:)`` when a store fails.
    public func save(_ environment: HabitatEnvironment<App>) throws(SnapshotError) {
        _ = try lock.withLock { () throws(SnapshotError) in try saveLocked(environment) }
    }

    /// Deletes the snapshot and every signed-in account's token: each account the index names,
    /// and each the snapshot names (the index may be damaged).
    /// - Throws: ``SnapshotError/store(_:)`` when a store fails.
    public func clear() throws(SnapshotError) {
        try lock.withLock { () throws(SnapshotError) in
            try SnapshotError.fromStore { () throws(StoreError) in
                // NB: an index that can't be read (a link, a FIFO) names nothing; its delete below
                // says why it failed, if it does.
                let index = TokenRecord.decode(try? secrets.secret(forKey: tokenKey))
                let named = pairs(in: try? savedPayload()).names
                for name in Set((index?.others ?? [:]).keys).union(index?.account.map { [$0] } ?? []).union(named) {
                    try secrets.setSecret(nil, forKey: tokenKey(forAccount: name))
                }
                try secrets.setSecret(nil, forKey: tokenKey)
                try store.removeValue(forKey: key)
            }
        }
    }

    // MARK: Loading

    /// Reads the saved snapshot, migrating it forward when it is older than `version`.
    ///
    /// A restored session's state is `AuthState.restored`. A snapshot whose user has no
    /// token in the secret store (the token was deleted, or the secret store was reset), or
    /// only a token of another save, loads as logged out, when the secret store
    /// ``SecretStore/reportsMissingReliably``.
    ///
    /// A secret store that throws, or that may say "not found" for a token it holds (the
    /// Keychain before first unlock), is not taken for one without a token: the session loads
    /// as `AuthState.awaitingToken`, with the user's data and an empty token, and
    /// ``SessionSnapshot/tokenProblem`` says why. Nothing is written or deleted; a later load,
    /// ``Habitat/EnvironmentStack/protectedDataDidBecomeAvailable(for:fileID:line:)``, or
    /// ``Habitat/EnvironmentStack/refreshSession(account:isolation:fileID:line:using:)`` with autosave on reads
    /// the token once the secret store can be read.
    ///
    /// A stored token that isn't a token record Habitat wrote (a damaged file) is reported in
    /// ``SessionSnapshot/tokenProblem`` and left where it is: the session loads as logged out.
    ///
    /// A token that no saved snapshot names, such as one a Keychain kept after the app was
    /// deleted and reinstalled, is never used, and is deleted here unless
    /// `discardsUnpairedSecrets` is `false`, or the secret store can't be trusted to have
    /// been read in full yet.
    ///
    /// Other signed-in accounts load the same way, each from its own item, into
    /// ``SessionSnapshot/otherAccounts``; one whose item is gone or damaged is left out (a damaged
    /// item is reported in ``SessionSnapshot/accountProblems`` and left in place), and the others
    /// load all the same.
    ///
    /// - Returns: The snapshot, or `nil` when none was saved.
    /// - Throws: ``SnapshotError``: the stored data is never changed by a failed load.
    public func load() throws(SnapshotError) -> SessionSnapshot<App>? {
        try lock.withLock { () throws(SnapshotError) in try loadLocked() }
    }

    /// `load()`, taking "not found" from the secret store as final when `secretsReadable`
    /// (the app said protected data is available).
    func load(secretsReadable: Bool) throws(SnapshotError) -> SessionSnapshot<App>? {
        try lock.withLock { () throws(SnapshotError) in try loadLocked(secretsReadable: secretsReadable) }
    }

    /// Keeps a snapshot that doesn't decode (the app's types changed shape) under
    /// `key + ".invalid"`, as a file store keeps a damaged file aside: the next save replaces the
    /// snapshot. The first such copy is kept; a later one doesn't replace it.
    private func keepAside(_ data: Data) {
        let aside = key + ".invalid"
        do {
            guard try store.data(forKey: aside) == nil else { return }
            try store.write([aside: data])
        } catch {
            // Best effort: the load throws what it found all the same.
        }
    }

    func loadLocked(secretsReadable: Bool = false) throws(SnapshotError) -> SessionSnapshot<App>? {
        let stored = try SnapshotError.fromStore { () throws(StoreError) in try store.data(forKey: key) }
        let payload: Payload?
        do throws(SnapshotError) {
            payload = try stored.map { (data) throws(SnapshotError) in try decodePayload(data) }
        } catch {
            if case .invalidSnapshot = error, let stored { keepAside(stored) }
            throw error
        }
        let index = Result { () throws(StoreError) in try secrets.secret(forKey: tokenKey) }
        let absenceIsFinal = secretsReadable || secrets.reportsMissingReliably
        let found = restoreAccounts(of: payload, index: index, absenceIsFinal: absenceIsFinal)
        if absenceIsFinal, discardsUnpairedSecrets {
            discardUnpaired(found, listed: (try? index.get()).flatMap(TokenRecord.decode)?.others ?? [:], index: index, payload: payload)
        }
        guard let payload else { return nil }
        var snapshot = SessionSnapshot<App>(session: found.session, config: payload.config, savedAt: payload.savedAt, tokenProblem: found.tokenProblem)
        snapshot.otherAccounts = found.others
        snapshot.accountProblems = found.accountProblems
        if SessionMachine.knowsStore(after: snapshot.accounts) {
            let active = found.session.map { App.accountID(of: $0.user) }
            var others = found.pairs
            if let active { others[active] = nil }
            // An account whose token is damaged is still named by the snapshot.
            for (name, entry) in pairs(in: payload).others where found.accountProblems[name] != nil && others[name] == nil {
                others[name] = entry
            }
            snapshot.known = KnownSession(pairID: active.flatMap { found.pairs[$0]?.id }, secret: found.session?.token.secret, others: others, active: active)
        }
        return snapshot
    }

    /// What a load found for the saved accounts.
    struct RestoredAccounts {
        var session: UserSession<App.User>?
        var tokenProblem: StoreError?
        var others: [UserSession<App.User>] = []
        var accountProblems: [String: StoreError] = [:]
        /// Accounts whose item holds only tokens of other saves.
        var unpaired: [String] = []
        /// Every restored account's pair, the active one's included, by name.
        var pairs: [String: TokenRecord.Entry] = [:]
        /// Whether the active token was read from the index (the layout before 0.2).
        var activeInIndex = false
    }

    /// The saved accounts, each with its token from its item, the active one first.
    private func restoreAccounts(of payload: Payload?, index: Result<Data?, StoreError>, absenceIsFinal: Bool) -> RestoredAccounts {
        var found = RestoredAccounts()
        var saved = (payload?.accounts ?? []).map { (name: $0.account ?? App.accountID(of: $0.user), session: $0, isActive: false) }
        if let active = payload?.session { saved.insert((App.accountID(of: active.user), active, true), at: 0) }
        for (name, session, isActive) in saved {
            var key = tokenKey(forAccount: name)
            var item = Result { () throws(StoreError) in try secrets.secret(forKey: key) }
            if isActive, Self.holdsActiveToken(index, pairedWith: session.pairID, item: item) {
                (key, item, found.activeInIndex) = (tokenKey, index, true)
            }
            let (restored, problem) = SessionMachine<App>.restored(session, from: item, key: key, absenceIsFinal: absenceIsFinal)
            if isActive {
                (found.session, found.tokenProblem) = (restored, problem)
            } else {
                if let restored { found.others.append(restored) }
                if let problem { found.accountProblems[name] = problem }
            }
            if let restored { found.pairs[name] = TokenRecord.Entry(id: session.pairID ?? "", secret: restored.token.secret) }
            if restored == nil, problem == nil, !found.activeInIndex || !isActive, case .success(.some) = item { found.unpaired.append(name) }
        }
        return found
    }

    /// Whether the active account's token is in the index, where versions before 0.2 kept it
    /// (and a plain secret before pairing), rather than in its item.
    private static func holdsActiveToken(_ index: Result<Data?, StoreError>, pairedWith pairID: String?, item: Result<Data?, StoreError>) -> Bool {
        guard case .success(let data?) = index else { return false }
        guard let record = TokenRecord.decode(data) else {
            // A plain secret, or a damaged one: reported as before, unless the item has a token.
            guard case .success(nil) = item else { return pairID == nil }
            return true
        }
        return record.tokens.contains { $0.id == pairID }
    }

    /// Deletes the items no saved account names (and the data of accounts a save signed out
    /// without finishing), and makes the index name the saved accounts only.
    private func discardUnpaired(_ found: RestoredAccounts, listed: [String: String], index: Result<Data?, StoreError>, payload: Payload?) {
        let savedActive = payload?.session.map { App.accountID(of: $0.user) }
        var named = Set(found.pairs.keys).union(found.accountProblems.keys)
        if found.tokenProblem != nil, let savedActive { named.insert(savedActive) }
        // NB: no snapshot names these tokens, and none can later: every save that names a
        // token writes it first, under the lock this load holds. Deleting them is best
        // effort; the next load tries again.
        for name in Set(listed.keys).subtracting(named).union(found.unpaired) {
            try? secrets.setSecret(nil, forKey: tokenKey(forAccount: name))
        }
        // A listed account that the snapshot doesn't name (or whose token is gone) was signed
        // out by a save that didn't finish: its data goes too.
        for name in Set(listed.keys).subtracting(named) {
            try? accountData(for: name).removeAll()
        }
        // The index names the snapshot's accounts only: after a crash between a save's index
        // and its snapshot, it agrees with the snapshot again.
        guard found.tokenProblem == nil, found.session.map(SessionMachine<App>.keepsStoredItem) != true, case .success(let data?) = index else { return }
        let active = found.session.map { App.accountID(of: $0.user) }
        var kept = TokenRecord.index(naming: Set(listed.keys).intersection(named).union(found.pairs.keys))
        if found.activeInIndex {
            // The layout before 0.2: the active token stays in the index, which names the others.
            let tokens = TokenRecord.decode(data)?.tokens.filter { $0.id == payload?.session?.pairID } ?? []
            guard !tokens.isEmpty, let active else { return }
            kept = TokenRecord(tokens: tokens, others: (kept.others ?? [:]).filter { $0.key != active }, account: active)
        }
        if TokenRecord.decode(data) != kept { try? secrets.setSecret(kept.encodedUnlessEmpty, forKey: tokenKey) }
    }

    /// The token in the stored secret that belongs with a snapshot naming `pairID`.
    ///
    /// A snapshot written before snapshots named their token (no `pairID`) goes with a plain
    /// secret, as that version stored it.
    static func token(in secret: Data?, pairedWith pairID: String?) -> String? {
        guard let secret else { return nil }
        guard let pairID else {
            guard TokenRecord.decode(secret) == nil, let value = String(data: secret, encoding: .utf8), !value.isEmpty else {
                return nil
            }
            return value
        }
        return TokenRecord.decode(secret)?.tokens.first { $0.id == pairID }?.secret
    }
}

extension SessionStore: CustomStringConvertible, CustomReflectable {
    /// The key, the version and the kinds of the two stores: what a log line needs, and never
    /// the lock or the migrations' closures.
    public var description: String {
        "SessionStore<\(App.self)>(key: \(key), version: \(version), store: \(type(of: store)), secrets: \(type(of: secrets)))"
    }

    /// The public settings only, for `dump`.
    public var customMirror: Mirror {
        Mirror(self, children: [
            "key": key, "version": version, "store": "\(type(of: store))", "secrets": "\(type(of: secrets))",
            "lockFile": lockFile as Any, "refreshesTokens": refreshesTokens,
        ], displayStyle: .struct)
    }
}
