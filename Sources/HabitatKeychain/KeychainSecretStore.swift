public import Foundation
import Habitat
public import HabitatPersistence

/// A `SecretStore` that keeps each secret as a generic-password item in the Keychain.
///
/// <!-- not compiled: `calls` defaults to the real Keychain only on Apple platforms -->
/// ```swift
/// import HabitatKeychain
///
/// let secrets = KeychainSecretStore()   // service: the bundle identifier let sessions =
/// SessionStore<AppSchema>(store: try JSONFileStore(url: sessionFile), secrets: secrets)
/// ```
///
/// - **One item per key**, named by its primary keys only: class, ``service``, account (the key)
///   and ``accessGroup`` when set, on every query, deletes included. Items are never
///   synchronizable. On macOS the data-protection keychain is always used, never the legacy
///   file-based one.
/// - **A write adds, then updates on a duplicate**; it never deletes first, so a write that fails
///   leaves the previous secret in place.
/// - **Three outcomes of a read, never two.** Not found is `nil`; a locked device
///   (`errSecInteractionNotAllowed`) throws `StoreError/unavailable(key:reason:)`, so a
///   session restores waiting for its token instead of logging out; a missing entitlement
///   throws `StoreError/missingEntitlement(key:fix:)`; any other status throws
///   `StoreError/systemStatus(key:status:message:)` with the system's message. No error
///   carries the secret.
/// - **"Not found" may not mean absent.** Before the first unlock, a prewarmed launch has been
///   seen to get "not found" for items that exist. Unless told otherwise, the store says so
///   (``reportsMissingReliably`` is `false` except on macOS), and a `SessionStore`
///   waits for `EnvironmentStack/protectedDataDidBecomeAvailable(for:fileID:line:)`
///   before it takes a missing token for a logout.
///
/// The Keychain calls go through the `calls` given to
/// ``init(service:accessGroup:accessibility:reportsMissingReliably:promptPolicy:calls:)``; tests pass a model of
/// the Keychain there (`HabitatPersistenceTesting`'s `SimulatedKeychain`) and never reach a real
/// keychain.
public final class KeychainSecretStore: SecretStore {
    /// The items' service (`kSecAttrService`).
    public let service: String
    /// The keychain access group every query names, if any: set it to share the token with an
    /// app extension that belongs to the same group.
    public let accessGroup: String?
    /// When the system lets the app read the items; see ``KeychainAccessibility``.
    public let accessibility: KeychainAccessibility
    /// Whether this store's "not found" is final; see `SecretStore/reportsMissingReliably`.
    public let reportsMissingReliably: Bool
    /// The largest secret this store writes, in bytes (16 KiB): Keychain calls are requests to
    /// a system service, meant for small secrets.
    public let maximumSecretSize = 16 << 10
    /// When an unlock asks the user again; see ``KeychainPromptPolicy``.
    public let promptPolicy: KeychainPromptPolicy
    /// The Keychain calls this store makes. For the package's tests.
    package let calls: KeychainCalls
    /// The last unlock's authentication and when its prompt was shown, while it may be used.
    private let unlocked = LockedBox<(authentication: KeychainAuthentication, at: ContinuousClock.Instant)?>(nil)
    /// How far the package's tests moved this store's clock ahead of the system's.
    private let clockOffset = LockedBox<Duration>(.zero)

    /// Opens the Keychain items of `service`.
    /// - Parameters:
    ///   - service: The items' service; by default the app's bundle identifier (or the
    ///     process's name when it has none).
    ///   - accessGroup: A keychain access group to keep the items in, named on every query;
    ///     `nil` for the app's default group.
    ///   - accessibility: When the items can be read; after the first unlock, this device only,
    ///     by default, so background refreshes can save a rotated token while the device is
    ///     locked. An item written with another class moves to this one on its next write.
    ///   - reportsMissingReliably: Whether "not found" is final at any time; by default `true`
    ///     on macOS and `false` elsewhere, where a launch before the first unlock may get "not
    ///     found" for an item that exists.
    ///   - promptPolicy: When an unlock of protected items asks the user again; once per
    ///     launch by default.
    ///   - calls: The Keychain calls; the real ones (`KeychainCalls.system`) by default on
    ///     Apple platforms.
    public init(
        service: String? = nil,
        accessGroup: String? = nil,
        accessibility: KeychainAccessibility = .afterFirstUnlockThisDeviceOnly,
        reportsMissingReliably: Bool = KeychainSecretStore.notFoundIsFinalOnThisPlatform,
        promptPolicy: KeychainPromptPolicy = .oncePerLaunch,
        calls: KeychainCalls
    ) {
        self.service = service ?? Bundle.main.bundleIdentifier ?? ProcessInfo.processInfo.processName
        self.accessGroup = accessGroup
        self.accessibility = accessibility
        self.reportsMissingReliably = reportsMissingReliably
        self.promptPolicy = promptPolicy
        self.calls = calls
    }

    /// Whether "not found" is final by default here: on macOS, yes; on iOS, tvOS, watchOS and
    /// visionOS, where data protection locks the Keychain until the first unlock, no.
    public static var notFoundIsFinalOnThisPlatform: Bool {
        #if os(macOS) || os(Linux) || os(Windows)
        true
        #else
        false
        #endif
    }

    /// The item that holds the secret named `key`.
    /// - Parameter key: The secret's name.
    /// - Returns: The item's primary keys.
    public func item(forKey key: String) -> KeychainItem {
        KeychainItem(service: service, account: key, accessGroup: accessGroup)
    }

    public func secret(forKey key: String) throws(StoreError) -> Data? {
        let item = item(forKey: key)
        let authentication = authentication
        let (status, data) = calls.read(item, authentication)
        switch status {
        case KeychainStatus.success: return data ?? Data()
        case KeychainStatus.itemNotFound, KeychainStatus.authFailed:
            // NB: only an unlocked read can find an item gone for good: without the user, a
            // protected item answers "interaction not allowed". An unprotected "not found" costs
            // no second call.
            if authentication != nil { try checkNotInvalidated(item) }
            guard status == KeychainStatus.itemNotFound else { throw error(status, item) }
            return nil
        default: throw error(status, item)
        }
    }

    public func setSecret(_ secret: Data?, forKey key: String) throws(StoreError) {
        let item = item(forKey: key)
        guard let secret else {
            let status = calls.delete(item)
            guard status == KeychainStatus.success || status == KeychainStatus.itemNotFound else { throw error(status, item) }
            return
        }
        guard secret.count <= maximumSecretSize else {
            throw .tooLarge(path: "keychain item \(item)", size: secret.count, limit: maximumSecretSize)
        }
        // NB: add, then update on a duplicate. Deleting first would lose the secret if the add
        // then failed (a locked device, a full keychain).
        var status = calls.add(item, secret, accessibility)
        if status == KeychainStatus.duplicateItem {
            // NB: a protected item keeps its access control: its data is replaced with the
            // unlock's authentication (without one, the write fails as unavailable).
            let (found, protection) = calls.protection(item)
            status = found == KeychainStatus.success && protection != .none
                ? calls.updateProtected(item, secret, authentication)
                : calls.update(item, secret, accessibility)
        }
        guard status == KeychainStatus.success else { throw error(status, item) }
    }

    /// Checks, at start-up, that this store can write, read back and delete an item: the
    /// entitlement, the access group and the lock state all allow it.
    ///
    /// On macOS a missing keychain entitlement shows only on a write (reads say "not found"):
    /// call this once at launch, and fail loudly in development when it throws.
    ///
    /// ```swift
    /// do {
    ///     try secrets.verifyAccess()
    /// } catch {
    ///     assertionFailure("the Keychain can't be used: \(error)")
    /// }
    /// ```
    /// - Throws: `StoreError` naming the probe item and the status.
    public func verifyAccess() throws(StoreError) {
        let key = "habitat.access-probe"
        let probe = Data(UUID().uuidString.utf8)
        try setSecret(probe, forKey: key)
        let readBack = try secret(forKey: key)
        try setSecret(nil, forKey: key)
        guard readBack == probe else {
            throw .unreadable(path: "keychain item \(item(forKey: key))", reason: "the probe item did not read back")
        }
    }

    // MARK: Protection

    /// Protects the secret under `key` as `protection`, or lifts its protection with
    /// ``KeychainProtection/none``: the item is written again with the new access control.
    ///
    /// Reading a protected item needs an unlock first (``unlock(reason:for:)``); so does
    /// changing its protection. The item is deleted and added again (the Keychain can't change
    /// an item's access control in place): when the add fails, the item is put back as it was.
    /// A process killed between the two loses the token: its account is signed out at the next
    /// launch, never given another's token.
    /// - Parameters:
    ///   - protection: Who must be present to read the secret from now on.
    ///   - key: The secret's name (for a session's token, use
    ///     `SessionStore.setProtection(_:forAccount:)`).
    /// - Throws: `StoreError`: `.unavailable` when the item is protected and the store isn't
    ///   unlocked, or when nothing is stored under `key`.
    public func setProtection(_ protection: KeychainProtection, forKey key: String) throws(StoreError) {
        let item = item(forKey: key)
        let current = try self.protection(forKey: key)
        guard current != protection else { return }
        guard let secret = try secret(forKey: key) else {
            throw .unavailable(key: key, reason: "nothing is stored under this key to protect")
        }
        let deleted = calls.delete(item)
        guard deleted == KeychainStatus.success else { throw error(deleted, item) }
        let added = calls.addProtected(item, secret, accessibility, protection)
        guard added == KeychainStatus.success else {
            _ = calls.addProtected(item, secret, accessibility, current)
            throw error(added, item)
        }
    }

    /// The protection of the secret under `key`, read from the item's attributes (never a
    /// prompt); ``KeychainProtection/none`` when nothing is stored there.
    /// - Throws: `StoreError` when the Keychain can't be read.
    public func protection(forKey key: String) throws(StoreError) -> KeychainProtection {
        let item = item(forKey: key)
        let (status, protection) = calls.protection(item)
        switch status {
        case KeychainStatus.success: return protection
        case KeychainStatus.itemNotFound: return .none
        default: throw error(status, item)
        }
    }

    /// Asks the user (Face ID, Touch ID, Optic ID or the passcode, as `protection` allows) so
    /// that protected secrets can be read, unless the ``promptPolicy`` lets the last unlock be
    /// reused. Call it from the foreground only, then tell the stack:
    ///
    /// <!-- not compiled: `secrets`, `appEnvironment` and `sessions` are an app's -->
    /// ```swift
    /// try await secrets.unlock(reason: "Unlock your account")
    /// appEnvironment.protectedDataDidBecomeAvailable(for: sessions)
    /// ```
    ///
    /// Nothing else in Habitat prompts: reads from the background, an extension, autosave or a
    /// refresh find a protected token unavailable, and its account waits for it.
    /// - Parameters:
    ///   - reason: What the prompt tells the user (`localizedReason`).
    ///   - protection: The protection to satisfy; user presence (biometry or the passcode) by
    ///     default. A biometry-only protection needs biometry: a passcode doesn't open it.
    /// - Throws: ``KeychainUnlockError``; the store stays as it was.
    public func unlock(reason: String, for protection: KeychainProtection = .userPresence) async throws(KeychainUnlockError) {
        if promptPolicy != .everyUnlock, let current = authentication, protection.isSatisfied(by: current.method) { return }
        replaceUnlock(with: (try await calls.authenticate(reason, protection).get(), now))
    }

    /// Ends the unlock (an app's "lock now", or leaving a screen that showed protected data):
    /// protected secrets are unavailable until the next ``unlock(reason:for:)``, which prompts.
    public func lock() {
        replaceUnlock(with: nil)
    }

    /// Replaces the unlock, ending the previous one's authentication.
    private func replaceUnlock(with unlock: (authentication: KeychainAuthentication, at: ContinuousClock.Instant)?) {
        let previous = unlocked.withLock { state in
            defer { state = unlock }
            return state?.authentication
        }
        if let previous { calls.invalidate(previous) }
    }

    /// Whether protected secrets can be read now without a prompt.
    public var isUnlocked: Bool { authentication != nil }

    /// The last unlock's authentication while the ``promptPolicy`` lets reads use it.
    private var authentication: KeychainAuthentication? {
        let (current, expired) = unlocked.withLock { state -> (KeychainAuthentication?, KeychainAuthentication?) in
            guard let unlock = state else { return (nil, nil) }
            if case .within(let window) = promptPolicy, now - unlock.at >= window {
                state = nil
                return (nil, unlock.authentication)
            }
            return (unlock.authentication, nil)
        }
        if let expired { calls.invalidate(expired) }
        return current
    }

    /// The time the prompt window is measured on.
    private var now: ContinuousClock.Instant { .now + clockOffset.withLock { $0 } }

    /// Moves this store's clock ahead, for the package's tests of the prompt window.
    package func advanceClock(by duration: Duration) {
        clockOffset.withLock { $0 += duration }
    }

    /// Throws when `item` exists but can never be read again: protected by the biometry enrolled
    /// when it was written, which changed since. The item is deleted.
    private func checkNotInvalidated(_ item: KeychainItem) throws(StoreError) {
        guard calls.protection(item) == (KeychainStatus.success, .biometryCurrentSet) else { return }
        _ = calls.delete(item)
        throw .protectionInvalidated(
            key: item.account,
            reason: "it was protected by the Face ID or Touch ID enrolled when it was saved, and a face or finger was added or removed since"
        )
    }

    /// The error for `status` about `item`: never the secret.
    private func error(_ status: Int32, _ item: KeychainItem) -> StoreError {
        let message = calls.message(status) ?? "OSStatus \(status)"
        switch status {
        case KeychainStatus.interactionNotAllowed, KeychainStatus.notAvailable:
            return .unavailable(
                key: item.account,
                reason: "the keychain can't be read now (\(message)): the device is locked, has not been unlocked since it started, or the item needs an unlock from the foreground (Face ID or the passcode)"
            )
        case KeychainStatus.missingEntitlement:
            let group = item.accessGroup.map { " and the access group '\($0)' in keychain-access-groups" } ?? ""
            return .missingEntitlement(
                key: item.account,
                fix: "sign the app with a keychain entitlement (the Keychain Sharing capability\(group)); on macOS the data-protection keychain needs it (\(message))"
            )
        default:
            return .systemStatus(key: item.account, status: status, message: message)
        }
    }
}
