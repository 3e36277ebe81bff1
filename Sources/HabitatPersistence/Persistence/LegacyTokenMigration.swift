import Foundation
public import Habitat

extension SessionStore {
    /// See ``Habitat/EnvironmentStack/migrateLegacyToken(from:key:to:user:)``.
    func migrateLegacyToken(
        from legacy: any KeyValueStore,
        key legacyKey: String,
        environment: HabitatEnvironment<App>,
        user: () -> App.User?
    ) throws(SnapshotError) -> LegacyTokenMigration {
        try lock.withLock { () throws(SnapshotError) in
            let stored = try SnapshotError.fromStore { () throws(StoreError) in try legacy.data(forKey: legacyKey) }
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
                environment.setActive(UserSession(user: user, token: AuthToken(token), state: .restored))
                _ = try saveLocked(environment)
                let readBack = try loadLocked()
                if let problem = readBack?.tokenProblem { throw .store(problem) }
                guard readBack?.session?.token.secret == token else {
                    throw .store(.unwritable(path: tokenKey, reason: "the migrated token did not read back"))
                }
                result = .migrated
            }
            try SnapshotError.fromStore { () throws(StoreError) in try legacy.removeValue(forKey: legacyKey) }
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
    /// before `restoreAtLaunch(from:)`.
    ///
    /// ```swift
    /// let legacy = UserDefaultsStore(.standard)
    /// try appEnvironment.migrateLegacyToken(from: legacy, key: "accessToken", to: sessions) {
    ///     legacyUser()          // the user the earlier version kept, if any
    /// }
    /// let launch = appEnvironment.restoreAtLaunch(from: sessions)
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

/// What ``Habitat/EnvironmentStack/migrateLegacyToken(from:key:to:user:)`` did.
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

extension SessionStore {
    /// Moves the session's token from `oldSecrets`, where an earlier version of the app kept it,
    /// into this store's `secrets`: an app update that starts sharing its session with an
    /// extension moves the token from the app's own keychain access group into a shared one,
    /// and existing users stay signed in.
    ///
    /// Call it at launch, before the restore. It copies every signed-in account's token and the
    /// index that lists them, reads each back, and only then deletes the old items; run again
    /// after a crash, it finishes the move. An item this store already holds (a run that moved
    /// it but was killed before deleting) is not copied again; the old copy is only deleted.
    ///
    /// Name the old store's access group explicitly (the app's own, team-prefixed): a Keychain
    /// query without a group reads and deletes in every group the app belongs to, the shared one
    /// included.
    ///
    /// ```swift
    /// let old = KeychainSecretStore(service: "com.example.app", accessGroup: "TEAMID.com.example.app")
    /// try sessions.moveToken(from: old)   // sessions' secrets: accessGroup "TEAMID.com.example.shared"
    /// appEnvironment.restoreAtLaunch(from: sessions)
    /// ```
    /// - Parameter oldSecrets: Where the token was kept before.
    /// - Returns: Whether there was a token to move.
    /// - Throws: ``SnapshotError/store(_:)`` when either store fails; nothing is deleted then
    ///   unless the copy read back.
    @discardableResult
    public func moveToken(from oldSecrets: any SecretStore) throws(SnapshotError) -> Bool {
        try lock.withLock { () throws(SnapshotError) -> Bool in
            try SnapshotError.fromStore { () throws(StoreError) -> Bool in
                guard let old = try oldSecrets.secret(forKey: tokenKey) else { return false }
                // Every account's item first, then the index that lists them, each read back;
                // the old copies go only once all were.
                let record = TokenRecord.decode(old)
                let keys = Set((record?.others ?? [:]).keys).union(record?.account.map { [$0] } ?? []).map(tokenKey(forAccount:)).sorted() + [tokenKey]
                for key in keys {
                    guard let data = try oldSecrets.secret(forKey: key), try secrets.secret(forKey: key) == nil else { continue }
                    try secrets.setSecret(data, forKey: key)
                    guard try secrets.secret(forKey: key) == data else {
                        throw .unavailable(key: key, reason: "the moved token did not read back; the old copy is kept")
                    }
                }
                // NB: the index last: until it goes, it lists the items a rerun still has to delete.
                for key in keys { try oldSecrets.setSecret(nil, forKey: key) }
                return true
            }
        }
    }
}
