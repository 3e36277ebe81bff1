public import Foundation

/// The four Keychain calls a ``KeychainSecretStore`` makes, as plain functions over Habitat's
/// own query type, so that tests can put a model of the Keychain in their place.
///
/// On Apple platforms, `system` calls `SecItemAdd`, `SecItemCopyMatching`, `SecItemUpdate`
/// and `SecItemDelete`, and does nothing else: every decision (what a status means, how a write
/// keeps the old secret) is the store's, and runs the same under a model on Linux.
/// `HabitatPersistenceTesting`'s `SimulatedKeychain` is such a model.
///
/// ```swift
/// let keychain = SimulatedKeychain()
/// let secrets = KeychainSecretStore(service: "com.example.app", calls: keychain.calls)
/// ```
public struct KeychainCalls: Sendable {
    /// Adds a new item (`SecItemAdd`). Returns `errSecDuplicateItem` when one with the same
    /// primary keys exists.
    public var add: @Sendable (_ item: KeychainItem, _ secret: Data, _ accessibility: KeychainAccessibility) -> Int32
    /// Reads an item's data (`SecItemCopyMatching` with one result and its data).
    public var copy: @Sendable (_ item: KeychainItem) -> (status: Int32, data: Data?)
    /// Replaces an existing item's data and accessibility (`SecItemUpdate`).
    public var update: @Sendable (_ item: KeychainItem, _ secret: Data, _ accessibility: KeychainAccessibility) -> Int32
    /// Deletes the item (`SecItemDelete`).
    public var delete: @Sendable (_ item: KeychainItem) -> Int32
    /// The system's message for a status (`SecCopyErrorMessageString`), if it has one.
    public var message: @Sendable (_ status: Int32) -> String?
    /// Reads an item's data with an unlock's authentication, or with none (`nil`): never with a
    /// prompt (`kSecUseAuthenticationContext`, a context that doesn't allow interaction). A
    /// protected item that needs one answers `errSecInteractionNotAllowed`.
    public var read: @Sendable (_ item: KeychainItem, _ authentication: KeychainAuthentication?) -> (status: Int32, data: Data?)
    /// Adds an item with an access control (`kSecAttrAccessControl`); with ``KeychainProtection/none``, as `add`.
    public var addProtected: @Sendable (_ item: KeychainItem, _ secret: Data, _ accessibility: KeychainAccessibility, _ protection: KeychainProtection) -> Int32
    /// Replaces a protected item's data with an unlock's authentication, keeping its access control.
    public var updateProtected: @Sendable (_ item: KeychainItem, _ secret: Data, _ authentication: KeychainAuthentication?) -> Int32
    /// The protection an item was written with, from its attributes alone (never its data,
    /// never a prompt); `errSecItemNotFound` when there is no such item.
    public var protection: @Sendable (_ item: KeychainItem) -> (status: Int32, protection: KeychainProtection)
    /// Shows the system's prompt (`LAContext.evaluatePolicy`) with `reason`, for a protection.
    public var authenticate: @Sendable (_ reason: String, _ protection: KeychainProtection) async -> Result<KeychainAuthentication, KeychainUnlockError>
    /// Ends an authentication (`LAContext.invalidate()`): later reads can't use it.
    public var invalidate: @Sendable (_ authentication: KeychainAuthentication) -> Void

    /// Makes a table of Keychain calls.
    /// - Parameters:
    ///   - add: Adds an item; `errSecDuplicateItem` (-25299) when it exists.
    ///   - copy: Reads an item's data.
    ///   - update: Replaces an item's data and accessibility.
    ///   - delete: Deletes an item.
    ///   - message: The system's words for a status.
    ///   - read: Reads with an authentication; by default `copy`, for a keychain without
    ///     access control.
    ///   - addProtected: Adds with an access control; by default `add` for no protection, and
    ///     `errSecUnimplemented` otherwise.
    ///   - updateProtected: Replaces a protected item's data; by default `errSecUnimplemented`.
    ///   - protection: An item's protection; by default ``KeychainProtection/none`` for every
    ///     item `copy` finds.
    ///   - authenticate: Prompts; by default ``KeychainUnlockError/notAvailable``.
    ///   - invalidate: Ends an authentication; by default nothing.
    public init(
        add: @escaping @Sendable (KeychainItem, Data, KeychainAccessibility) -> Int32,
        copy: @escaping @Sendable (KeychainItem) -> (status: Int32, data: Data?),
        update: @escaping @Sendable (KeychainItem, Data, KeychainAccessibility) -> Int32,
        delete: @escaping @Sendable (KeychainItem) -> Int32,
        message: @escaping @Sendable (Int32) -> String? = { _ in nil },
        read: (@Sendable (KeychainItem, KeychainAuthentication?) -> (status: Int32, data: Data?))? = nil,
        addProtected: (@Sendable (KeychainItem, Data, KeychainAccessibility, KeychainProtection) -> Int32)? = nil,
        updateProtected: (@Sendable (KeychainItem, Data, KeychainAuthentication?) -> Int32)? = nil,
        protection: (@Sendable (KeychainItem) -> (status: Int32, protection: KeychainProtection))? = nil,
        authenticate: (@Sendable (String, KeychainProtection) async -> Result<KeychainAuthentication, KeychainUnlockError>)? = nil,
        invalidate: @escaping @Sendable (KeychainAuthentication) -> Void = { _ in }
    ) {
        self.add = add
        self.copy = copy
        self.update = update
        self.delete = delete
        self.message = message
        self.read = read ?? { item, _ in copy(item) }
        self.addProtected = addProtected ?? { item, secret, accessibility, protection in
            protection == .none ? add(item, secret, accessibility) : KeychainStatus.unimplemented
        }
        self.updateProtected = updateProtected ?? { _, _, _ in KeychainStatus.unimplemented }
        self.protection = protection ?? { item in (copy(item).status, .none) }
        self.authenticate = authenticate ?? { _, _ in .failure(.notAvailable) }
        self.invalidate = invalidate
    }
}

/// The primary keys of one generic-password item: what makes it unique in the Keychain, and all
/// a ``KeychainSecretStore`` query names (never the data, never an accessibility class).
public struct KeychainItem: Sendable, Hashable, CustomStringConvertible {
    /// The item's service (`kSecAttrService`).
    public var service: String
    /// The item's account (`kSecAttrAccount`): the secret's key.
    public var account: String
    /// The keychain access group (`kSecAttrAccessGroup`), sent on every query when set; `nil`
    /// means the app's default group on a write, and any of the app's groups on a read or delete.
    public var accessGroup: String?

    /// Names an item.
    /// - Parameters:
    ///   - service: The service.
    ///   - account: The account.
    ///   - accessGroup: The access group, if any.
    public init(service: String, account: String, accessGroup: String? = nil) {
        self.service = service
        self.account = account
        self.accessGroup = accessGroup
    }

    /// `service/account`, with the access group when there is one; never any data.
    public var description: String {
        accessGroup.map { "\(service)/\(account) in \($0)" } ?? "\(service)/\(account)"
    }
}

/// When the system lets the app read a Keychain item (`kSecAttrAccessible`).
///
/// Every class here is "this device only": the item never leaves the device in a backup or a
/// migration to a new phone, so a restored backup starts logged out instead of with a copied
/// token.
public enum KeychainAccessibility: String, Sendable, Hashable, CaseIterable {
    /// Readable from the first unlock after a restart until the next restart
    /// (`kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly`): background refreshes while the
    /// device is locked can read and save the token. The default.
    case afterFirstUnlockThisDeviceOnly
    /// Readable only while the device is unlocked
    /// (`kSecAttrAccessibleWhenUnlockedThisDeviceOnly`): a background refresh while the device is
    /// locked can't save a rotated token.
    case whenUnlockedThisDeviceOnly
    /// Readable only while unlocked, and only while the device has a passcode
    /// (`kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly`); deleted when the passcode is removed.
    case whenPasscodeSetThisDeviceOnly
}

/// The Keychain's status codes a ``KeychainSecretStore`` tells apart (Security's `errSec…`).
public enum KeychainStatus {
    /// `errSecSuccess`.
    public static let success: Int32 = 0
    /// `errSecItemNotFound`: no such item.
    public static let itemNotFound: Int32 = -25300
    /// `errSecDuplicateItem`: an item with these primary keys exists.
    public static let duplicateItem: Int32 = -25299
    /// `errSecInteractionNotAllowed`: the item can't be reached now (the device is locked).
    public static let interactionNotAllowed: Int32 = -25308
    /// `errSecNotAvailable`: no keychain is available right now.
    public static let notAvailable: Int32 = -25291
    /// `errSecMissingEntitlement`: the app lacks the entitlement the query needs.
    public static let missingEntitlement: Int32 = -34018
    /// `errSecAuthFailed`: the authentication given doesn't open the item.
    public static let authFailed: Int32 = -25293
    /// `errSecUnimplemented`: the calls can't do this (a model without access control).
    public static let unimplemented: Int32 = -4
}
