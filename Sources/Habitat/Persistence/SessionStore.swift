public import Foundation

/// Saves the session part of an environment (user, auth state, token expiry, configuration)
/// as a versioned snapshot, with the token kept apart in a ``SecretStore``.
///
/// ```swift
/// let sessions = SessionStore<MyApp>(
///     store: try JSONFileStore(url: dataDirectory.appendingPathComponent("session.json")),
///     secrets: try FileSecretStore(directory: dataDirectory.appendingPathComponent("secrets")),
///     version: 2,
///     migrations: [SnapshotMigration(from: 1) { try renameField(in: $0) }]
/// )
/// AppEnvironment.restoreAtLaunch(from: sessions)   // at launch
/// AppEnvironment.enableAutosave(to: sessions)       // from then on
/// ```
///
/// The snapshot is JSON under ``key`` in the plain store; the token's secret is under
/// `"\(key).token"` in the secret store and nowhere else.
///
/// Several processes (an app and its extensions) and several stacks may share one session
/// store: saves and loads take turns on an advisory lock on ``lockFile``, and so do refreshes
/// (on the same path with `.refresh` appended), so that only one of them asks the server at a
/// time and the others use the token it got.
public struct SessionStore<App: EnvironmentSchema>: Sendable {
    /// Where the snapshot goes.
    public let store: any KeyValueStore
    /// Where the token goes.
    public let secrets: any SecretStore
    /// The snapshot's key in ``store``; the token's key in ``secrets`` is `"\(key).token"`.
    public let key: String
    /// The snapshot version this app writes, and the newest it reads.
    public let version: Int
    /// The file whose advisory lock the users of this store take turns on, in every process;
    /// `nil` when only this process's users of this value take turns.
    public let lockFile: URL?
    /// Whether a load deletes a token that no saved snapshot names (see ``load()``).
    public let discardsUnpairedSecrets: Bool
    private let migrations: [Int: SnapshotMigration]
    let lock: SessionLock

    /// Creates a session store.
    /// - Parameters:
    ///   - store: Where the snapshot goes.
    ///   - secrets: Where the token goes.
    ///   - key: The snapshot's key; `"habitat.session"` by default.
    ///   - version: The snapshot version this app writes; 1 by default. Raise it when `User` or
    ///     `Config` change shape, and register a migration from the previous version.
    ///   - migrations: Migrations that move older snapshots forward, one version at a time.
    ///   - lockFile: The file the processes sharing this store lock while they save, load or
    ///     refresh. By default, for a ``JSONFileStore``, its file's path with `.session-lock`
    ///     appended; for other stores, none: pass one in a directory every process can reach
    ///     (an app group's container) when several processes share the store.
    ///   - discardsUnpairedSecrets: Whether a load deletes a token that no saved snapshot names,
    ///     such as one a Keychain kept after the app was deleted and reinstalled. `true` by
    ///     default; such a token is never used either way.
    public init(
        store: any KeyValueStore,
        secrets: any SecretStore,
        key: String = "habitat.session",
        version: Int = 1,
        migrations: [SnapshotMigration] = [],
        lockFile: URL? = nil,
        discardsUnpairedSecrets: Bool = true
    ) {
        self.store = store
        self.secrets = secrets
        self.key = key
        self.version = version
        self.migrations = Dictionary(migrations.map { ($0.from, $0) }, uniquingKeysWith: { _, last in last })
        let lockFile = lockFile ?? (store as? JSONFileStore).map { URL(fileURLWithPath: $0.url.path + ".session-lock") }
        self.lockFile = lockFile
        self.discardsUnpairedSecrets = discardsUnpairedSecrets
        lock = SessionLock(path: lockFile?.path)
    }

    /// A session store that keeps everything in memory, for tests and previews.
    /// - Returns: A store over a new ``InMemoryStore`` and ``InMemorySecretStore``.
    public static func inMemory() -> Self {
        SessionStore(store: InMemoryStore(), secrets: InMemorySecretStore())
    }

    /// The token's key in ``secrets``.
    public var tokenKey: String { key + ".token" }

    // MARK: Saving

    /// Saves the session and configuration of `environment`.
    ///
    /// The snapshot and the token are one pair: the snapshot names the token it belongs with by
    /// a pairing identifier, and ``load()`` uses a token only with the snapshot that names it. A
    /// save that changes the token writes the secret store first, keeping the previous token
    /// beside the new one, then the snapshot, then drops the previous token. A crash at any
    /// point leaves the previous session or the new one, each with its own token, and never one
    /// user's snapshot with another save's token. A save that keeps the token writes only the
    /// snapshot. Logging out deletes the token first, so a crash leaves the app logged out and
    /// no token on disk. The token never goes into the plain store.
    ///
    /// A session ``AuthState/awaitingToken`` (restored while the secret store couldn't be read)
    /// is saved without touching the secret store: the snapshot keeps naming the token it named.
    ///
    /// - Parameter environment: The environment whose session and config to save.
    /// - Throws: ``SnapshotError/store(_:)`` when a store fails.
    public func save(_ environment: HabitatEnvironment<App>) throws(SnapshotError) {
        try lock.withLock { () throws(SnapshotError) in try saveLocked(environment) }
    }

    private func saveLocked(_ environment: HabitatEnvironment<App>) throws(SnapshotError) {
        do {
            if environment.session?.state == .awaitingToken {
                let saved = try store.data(forKey: key).flatMap { try? decodePayload($0) }
                try store.setData(try encode(environment, pairID: saved?.session?.pairID), forKey: key)
                return
            }
            guard let session = environment.session else {
                try secrets.setSecret(nil, forKey: tokenKey)
                try store.setData(try encode(environment, pairID: nil), forKey: key)
                return
            }
            let stored = TokenRecord.decode(try secrets.secret(forKey: tokenKey))
            if let newest = stored?.tokens.first, newest.secret == session.token.secret {
                try store.setData(try encode(environment, pairID: newest.id), forKey: key)
                if stored?.tokens.count != 1 {
                    try secrets.setSecret(TokenRecord(tokens: [newest]).encoded(), forKey: tokenKey)
                }
                return
            }
            let entry = TokenRecord.Entry(id: UUID().uuidString, secret: session.token.secret)
            let previous = stored?.tokens.first.map { [$0] } ?? []
            try secrets.setSecret(TokenRecord(tokens: [entry] + previous).encoded(), forKey: tokenKey)
            try store.setData(try encode(environment, pairID: entry.id), forKey: key)
            if !previous.isEmpty {
                try secrets.setSecret(TokenRecord(tokens: [entry]).encoded(), forKey: tokenKey)
            }
        } catch let error as SnapshotError {
            throw error
        } catch let error as StoreError {
            throw .store(error)
        } catch {
            throw .store(.encodingFailed(key: key, reason: describe(error)))
        }
    }

    private func encode(_ environment: HabitatEnvironment<App>, pairID: String?) throws(SnapshotError) -> Data {
        let envelope = Envelope(
            version: version,
            payload: Payload(
                session: environment.session.map {
                    SavedSession(user: $0.user, state: $0.state, tokenExpiresAt: $0.token.expiresAt, pairID: pairID)
                },
                config: environment.config,
                savedAt: environment.now()
            )
        )
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            encoder.dateEncodingStrategy = .secondsSince1970
            return try encoder.encode(envelope)
        } catch {
            throw .store(.encodingFailed(key: key, reason: describe(error)))
        }
    }

    /// Deletes the snapshot and the token.
    /// - Throws: ``SnapshotError/store(_:)`` when a store fails.
    public func clear() throws(SnapshotError) {
        try lock.withLock { () throws(SnapshotError) in
            do throws(StoreError) {
                try secrets.setSecret(nil, forKey: tokenKey)
                try store.removeValue(forKey: key)
            } catch {
                throw .store(error)
            }
        }
    }

    // MARK: Loading

    /// Reads the saved snapshot, migrating it forward when it is older than ``version``.
    ///
    /// A restored session's state is ``AuthState/restored``. A snapshot whose user has no
    /// token in the secret store (the token was deleted, or the secret store was reset), or
    /// only a token of another save, loads as logged out.
    ///
    /// A secret store that throws is not taken for one without a token: the session loads as
    /// ``AuthState/awaitingToken``, with the user's data and an empty token, and
    /// ``SessionSnapshot/tokenProblem`` says why. Nothing is deleted; a later load (or
    /// ``EnvironmentStack/refreshSession(isolation:fileID:line:using:)`` with autosave on) reads the token
    /// once the secret store can be read again.
    ///
    /// A token that no saved snapshot names, such as one a Keychain kept after the app was
    /// deleted and reinstalled, is never used, and is deleted here unless
    /// ``discardsUnpairedSecrets`` is `false`.
    ///
    /// - Returns: The snapshot, or `nil` when none was saved.
    /// - Throws: ``SnapshotError``: the stored data is never changed by a failed load.
    public func load() throws(SnapshotError) -> SessionSnapshot<App>? {
        try lock.withLock { () throws(SnapshotError) in try loadLocked() }
    }

    private func loadLocked() throws(SnapshotError) -> SessionSnapshot<App>? {
        let stored: Data?
        do {
            stored = try store.data(forKey: key)
        } catch {
            throw .store(error)
        }
        let payload = try stored.map { (data) throws(SnapshotError) in try decodePayload(data) }
        let secret: Result<Data?, StoreError>
        do {
            secret = .success(try secrets.secret(forKey: tokenKey))
        } catch {
            secret = .failure(error)
        }
        var session: UserSession<App.User>?
        var tokenProblem: StoreError?
        if let saved = payload?.session {
            switch secret {
            case .success(let secret):
                session = Self.token(in: secret, pairedWith: saved.pairID).map {
                    UserSession(user: saved.user, token: AuthToken($0, expiresAt: saved.tokenExpiresAt), state: .restored)
                }
            case .failure(let error):
                tokenProblem = error
                session = UserSession(user: saved.user, token: AuthToken("", expiresAt: saved.tokenExpiresAt), state: .awaitingToken)
            }
        }
        if session == nil, discardsUnpairedSecrets, case .success(.some) = secret {
            // NB: no snapshot names this token, and none can later: every save that names a
            // token writes it first, under the lock this load holds. Deleting it is best
            // effort; the next load tries again.
            try? secrets.setSecret(nil, forKey: tokenKey)
        }
        guard let payload else { return nil }
        return SessionSnapshot(session: session, config: payload.config, savedAt: payload.savedAt, tokenProblem: tokenProblem)
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

    private func decodePayload(_ data: Data) throws(SnapshotError) -> Payload {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        // NB: the common case, a snapshot of the current version, decodes in one pass; only
        // when that fails is the version read on its own, to migrate or to report.
        if let current = try? decoder.decode(VersionedEnvelope.self, from: data), current.version == version {
            return current.payload
        }
        let found: Int
        do {
            found = try decoder.decode(VersionProbe.self, from: data).version
        } catch {
            throw .invalidSnapshot(key: key, reason: describe(error))
        }
        guard found <= version else {
            throw .unsupportedVersion(key: key, found: found, newest: version)
        }
        guard found >= 1 else { throw .invalidSnapshot(key: key, reason: "invalid version \(found)") }
        var current = data
        for from in found..<version {
            guard let migration = migrations[from] else { throw .missingMigration(key: key, from: from) }
            do {
                current = try migration.migrate(current)
            } catch {
                throw .migrationFailed(key: key, from: from, reason: describe(error))
            }
        }
        do {
            return try decoder.decode(AnyVersionEnvelope.self, from: current).payload
        } catch {
            throw .invalidSnapshot(key: key, reason: describe(error))
        }
    }

    // MARK: The format

    private struct VersionProbe: Decodable { var version: Int }

    private struct VersionedEnvelope: Decodable {
        var version: Int
        var payload: Payload
    }

    /// What is written: `{"version": N, "payload": {...}}`.
    private struct Envelope: Encodable {
        var version: Int
        var payload: Payload
    }

    /// What is read once the version is known and migrated: migrations may leave the version
    /// field as it was, so it is not checked again.
    private struct AnyVersionEnvelope: Decodable {
        var payload: Payload
    }

    private struct Payload: Codable {
        var session: SavedSession?
        var config: App.Config
        var savedAt: Date?
    }

    private struct SavedSession: Codable {
        var user: App.User
        var state: AuthState
        var tokenExpiresAt: Date?
        /// Names the token this snapshot belongs with in the secret store; `nil` in snapshots
        /// written before pairing.
        var pairID: String?
    }
}

/// What a ``SessionStore`` keeps in its secret store: the token of the newest save, and, while
/// a save that changes the token is under way, the previous token too, each under the pairing
/// identifier its snapshot names.
struct TokenRecord: Codable, Equatable {
    struct Entry: Codable, Equatable {
        var id: String
        var secret: String
    }

    static let formatName = "habitat.token"
    var format = formatName
    /// Newest first.
    var tokens: [Entry]

    init(tokens: [Entry]) {
        self.tokens = tokens
    }

    func encoded() -> Data {
        // NB: encoding two strings and an array of them cannot fail.
        (try? JSONEncoder().encode(self)) ?? Data()
    }

    /// The record in `data`, or `nil` when `data` is not one (a token stored plainly by an
    /// earlier version, or nothing).
    static func decode(_ data: Data?) -> TokenRecord? {
        guard let data, data.first == UInt8(ascii: "{"),
              let record = try? JSONDecoder().decode(TokenRecord.self, from: data),
              record.format == formatName
        else { return nil }
        return record
    }
}

/// A saved session and configuration, as loaded by ``SessionStore/load()``.
public struct SessionSnapshot<App: EnvironmentSchema>: Sendable {
    /// The saved session with its token, in state ``AuthState/restored``; `nil` when the app
    /// was logged out (or the token is gone).
    public var session: UserSession<App.User>?
    /// The saved configuration.
    public var config: App.Config
    /// When the snapshot was saved, by the saving environment's clock.
    public var savedAt: Date?
    /// Why the session's token couldn't be read, when the secret store threw: the session is
    /// then ``AuthState/awaitingToken``.
    public var tokenProblem: StoreError?

    /// Creates a snapshot.
    /// - Parameters:
    ///   - session: The restored session, if any.
    ///   - config: The configuration.
    ///   - savedAt: When it was saved.
    ///   - tokenProblem: Why the token couldn't be read, if it couldn't.
    public init(session: UserSession<App.User>?, config: App.Config, savedAt: Date?, tokenProblem: StoreError? = nil) {
        self.session = session
        self.config = config
        self.savedAt = savedAt
        self.tokenProblem = tokenProblem
    }
}

/// Moves a snapshot from one version to the next.
///
/// A migration receives the whole snapshot document as JSON (`{"version": N, "payload":
/// {"session": {"user": ..., ...}, "config": ...}}`) and returns the document for version
/// `from + 1`. Habitat chains migrations to reach the current version.
///
/// ```swift
/// // Version 2 renamed the user's "fullName" to "name".
/// let renameFullName = SnapshotMigration(from: 1) { data in
///     guard var document = try JSONSerialization.jsonObject(with: data) as? [String: Any],
///           var payload = document["payload"] as? [String: Any]
///     else { throw MigrationError.notASnapshot }
///     if var session = payload["session"] as? [String: Any], var user = session["user"] as? [String: Any] {
///         user["name"] = user.removeValue(forKey: "fullName")
///         session["user"] = user
///         payload["session"] = session
///     }
///     document["payload"] = payload
///     return try JSONSerialization.data(withJSONObject: document)
/// }
/// ```
public struct SnapshotMigration: Sendable {
    /// The version this migration reads; it produces version `from + 1`.
    public let from: Int
    /// Transforms the snapshot document.
    public let migrate: @Sendable (Data) throws -> Data

    /// Creates a migration.
    /// - Parameters:
    ///   - from: The version it reads.
    ///   - migrate: Returns the document for the next version.
    public init(from: Int, migrate: @escaping @Sendable (Data) throws -> Data) {
        self.from = from
        self.migrate = migrate
    }
}

// MARK: - Moving a token from an earlier version's store

extension SessionStore {
    /// See ``EnvironmentStack/migrateLegacyToken(from:key:to:user:)``.
    func migrateLegacyToken(
        from legacy: any KeyValueStore,
        key legacyKey: String,
        environment: HabitatEnvironment<App>,
        user: () -> App.User?
    ) throws(SnapshotError) -> LegacyTokenMigration {
        try lock.withLock { () throws(SnapshotError) in
            let stored: Data?
            do throws(StoreError) {
                stored = try legacy.data(forKey: legacyKey)
            } catch {
                throw .store(error)
            }
            guard let stored, let token = Self.legacyToken(in: stored) else { return .nothingToMigrate }
            // NB: a snapshot saved already means either a run of this migration got as far as
            // saving (and was stopped before deleting the legacy token), or the app has moved on
            // without it. Either way the legacy token is deleted only after the saved session
            // was read back.
            let result: LegacyTokenMigration
            if let saved = try loadLocked() {
                if let problem = saved.tokenProblem { throw .store(problem) }
                result = saved.session?.token.secret == token ? .migrated : .discardedStale
            } else {
                guard let user = user() else { return .noUser }
                var environment = environment
                environment.session = UserSession(user: user, token: AuthToken(token), state: .restored)
                try saveLocked(environment)
                let readBack = try loadLocked()
                if let problem = readBack?.tokenProblem { throw .store(problem) }
                guard readBack?.session?.token.secret == token else {
                    throw .store(.unwritable(path: tokenKey, reason: "the migrated token did not read back"))
                }
                result = .migrated
            }
            do throws(StoreError) {
                try legacy.removeValue(forKey: legacyKey)
            } catch {
                throw .store(error)
            }
            return result
        }
    }

    /// A token as an earlier version stored it: a JSON string (as ``StoreKey`` writes one) or
    /// plain UTF-8 text; `nil` when empty.
    static func legacyToken(in data: Data) -> String? {
        let text = (try? JSONDecoder().decode(String.self, from: data)) ?? String(data: data, encoding: .utf8)
        guard let text, !text.isEmpty else { return nil }
        return text
    }
}

extension EnvironmentStack {
    /// Moves a token that an earlier version of the app kept in a plain store (`UserDefaults`,
    /// say) into `sessions`, where the token lives in the secret store. Call it at launch,
    /// before ``restoreAtLaunch(from:fileID:line:)``.
    ///
    /// ```swift
    /// let legacy = UserDefaultsStore(.standard)
    /// try AppEnvironment.migrateLegacyToken(from: legacy, key: "accessToken", to: sessions) {
    ///     legacyUser()          // the user the earlier version kept, if any
    /// }
    /// let launch = AppEnvironment.restoreAtLaunch(from: sessions)
    /// ```
    ///
    /// It copies, verifies, then deletes: the session (the user from `user`, the legacy
    /// token, the stack's current configuration) is saved, read back and compared, and only
    /// then is the legacy token deleted. It is idempotent, and safe to stop at any point: run
    /// again, it finishes the job, so a token is always in one place or the other. When a
    /// session has been saved already, the legacy token is deleted once the saved session was
    /// read back: it was migrated before, or the app has moved on without it.
    ///
    /// - Parameters:
    ///   - legacy: Where the earlier version kept the token.
    ///   - legacyKey: The token's key there; its value is the token as UTF-8 text or a JSON
    ///     string.
    ///   - sessions: Where the session goes.
    ///   - user: The user the token belongs to; called only when there is a token to move,
    ///     while `sessions` is locked (so it must not use `sessions` itself). Return `nil` to
    ///     leave the legacy token where it is.
    /// - Returns: What happened.
    /// - Throws: ``SnapshotError``; the legacy token is still in place then.
    @discardableResult
    public func migrateLegacyToken(
        from legacy: any KeyValueStore,
        key legacyKey: String,
        to sessions: SessionStore<App>,
        user: () -> App.User?
    ) throws(SnapshotError) -> LegacyTokenMigration {
        try sessions.migrateLegacyToken(from: legacy, key: legacyKey, environment: current, user: user)
    }
}

/// What ``EnvironmentStack/migrateLegacyToken(from:key:to:user:)`` did.
public enum LegacyTokenMigration: Sendable, Hashable {
    /// The legacy token belongs to the saved session now, and is gone from the legacy store.
    case migrated
    /// There was no legacy token: nothing to do (every launch after the migration).
    case nothingToMigrate
    /// A session other than the legacy token's had been saved already: the legacy token was
    /// stale, and has been deleted.
    case discardedStale
    /// There was a legacy token, but `user` returned `nil`: it was left where it is.
    case noUser
}
