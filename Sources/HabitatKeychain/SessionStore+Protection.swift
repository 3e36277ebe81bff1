import Habitat
public import HabitatPersistence

extension SessionStore {
    /// Protects an account's token in the Keychain as `protection` (Face ID, Touch ID or the
    /// passcode), or lifts its protection with ``KeychainProtection/none``.
    ///
    /// Call it once the account's session was saved (after a sign-in: a new sign-in writes a new,
    /// unprotected item), and again whenever the user changes the setting. Turning a protection
    /// off, or changing it, needs an unlock first (``KeychainSecretStore/unlock(reason:for:)``).
    ///
    /// <!-- not compiled: `secrets`, `sessions` and `appEnvironment` are an app's -->
    /// ```swift
    /// appEnvironment.login(user: ada, token: token)
    /// try appEnvironment.save(to: sessions)
    /// try sessions.setProtection(.userPresence, forAccount: "ada")
    /// ```
    ///
    /// From then on, reading the token needs an unlock: a launch restores the account waiting
    /// for its token (`AuthState.awaitingToken`), as on a locked device, until the app
    /// unlocks from the foreground and calls
    /// `EnvironmentStack.protectedDataDidBecomeAvailable(for:)`. Nothing prompts on its own.
    /// - Parameters:
    ///   - protection: Who must be present to read the token.
    ///   - name: The account's name (`EnvironmentSchema.accountID(of:)`).
    /// - Throws: `StoreError`: `.unavailable` when this store's secrets are not a
    ///   ``KeychainSecretStore``, when the account has no saved token, or when the token is
    ///   protected and the Keychain store isn't unlocked.
    public func setProtection(_ protection: KeychainProtection, forAccount name: String) throws(StoreError) {
        let key = tokenKey(forAccount: name)
        let keychain = try keychainStore(for: key)
        try withSessionLock { () throws(StoreError) in try keychain.setProtection(protection, forKey: key) }
    }

    /// The protection of an account's token; ``KeychainProtection/none`` when it has none or
    /// no token is saved.
    /// - Parameter name: The account's name.
    /// - Throws: `StoreError` when the Keychain can't be read, or this store's secrets are not a
    ///   ``KeychainSecretStore``.
    public func protection(forAccount name: String) throws(StoreError) -> KeychainProtection {
        let key = tokenKey(forAccount: name)
        return try keychainStore(for: key).protection(forKey: key)
    }

    private func keychainStore(for key: String) throws(StoreError) -> KeychainSecretStore {
        guard let keychain = secrets as? KeychainSecretStore else {
            throw .unavailable(key: key, reason: "this session store keeps its secrets in \(type(of: secrets)), not a KeychainSecretStore: only the Keychain protects a token")
        }
        return keychain
    }
}
