// The Apple binding: the four SecItem calls and nothing else. Every decision is the store's.
//
// NB: on Linux this file is compiled by the KeychainBindingCheck test target of the package
// Tests/Compatibility against `SecurityStandIn`, a module with Security's Swift signatures, so
// that a mistake here fails CI before it reaches an Apple user (see
// Tests/Compatibility/StandIns/SecurityStandIn).
// NB: on Apple platforms the check target compiles nothing (the real binding is in the library,
// and no test may reach a real keychain).
#if canImport(Security) && !HABITAT_SECURITY_STANDIN
import Foundation
import Security
#elseif HABITAT_SECURITY_STANDIN && !canImport(Security)
import Foundation
public import HabitatKeychain
import SecurityStandIn
#endif

#if (canImport(Security) && !HABITAT_SECURITY_STANDIN) || (HABITAT_SECURITY_STANDIN && !canImport(Security))
extension KeychainCalls {
    /// The real Keychain: `SecItemAdd`, `SecItemCopyMatching`, `SecItemUpdate` and
    /// `SecItemDelete`, on the data-protection keychain, with generic-password items that are
    /// never synchronizable.
    public static let system = KeychainCalls(
        add: { item, secret, accessibility in
            var attributes = KeychainCalls.query(item)
            attributes[kSecValueData as String] = secret
            attributes[kSecAttrAccessible as String] = accessibility.systemValue
            return SecItemAdd(attributes as CFDictionary, nil)
        },
        copy: { item in
            var search = KeychainCalls.query(item)
            search[kSecReturnData as String] = true
            search[kSecMatchLimit as String] = kSecMatchLimitOne
            var result: CFTypeRef?
            let status = SecItemCopyMatching(search as CFDictionary, &result)
            return (status, result as? Data)
        },
        update: { item, secret, accessibility in
            let changes: [String: Any] = [
                kSecValueData as String: secret,
                kSecAttrAccessible as String: accessibility.systemValue,
            ]
            return SecItemUpdate(KeychainCalls.query(item) as CFDictionary, changes as CFDictionary)
        },
        delete: { item in
            SecItemDelete(KeychainCalls.query(item) as CFDictionary)
        },
        message: { status in
            SecCopyErrorMessageString(status, nil).map { $0 as String }
        }
    )

    /// The item's primary keys, and the data-protection keychain.
    private static func query(_ item: KeychainItem) -> [String: Any] {
        var query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrService as String: item.service,
            kSecAttrAccount as String: item.account,
            kSecUseDataProtectionKeychain as String: true,
        ]
        if let group = item.accessGroup {
            query[kSecAttrAccessGroup as String] = group
        }
        return query
    }
}

extension KeychainAccessibility {
    /// The `kSecAttrAccessible…` constant.
    fileprivate var systemValue: CFString {
        switch self {
        case .afterFirstUnlockThisDeviceOnly: kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly
        case .whenUnlockedThisDeviceOnly: kSecAttrAccessibleWhenUnlockedThisDeviceOnly
        case .whenPasscodeSetThisDeviceOnly: kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly
        }
    }
}

extension KeychainSecretStore {
    /// Opens the Keychain items of `service` in the real Keychain.
    /// - Parameters:
    ///   - service: The items' service; by default the app's bundle identifier.
    ///   - accessGroup: A keychain access group named on every query; `nil` for the app's
    ///     default group.
    ///   - accessibility: When the items can be read; after the first unlock, this device only,
    ///     by default.
    ///   - reportsMissingReliably: Whether "not found" is final at any time; by default `true`
    ///     on macOS and `false` elsewhere.
    public convenience init(
        service: String? = nil,
        accessGroup: String? = nil,
        accessibility: KeychainAccessibility = .afterFirstUnlockThisDeviceOnly,
        reportsMissingReliably: Bool = KeychainSecretStore.notFoundIsFinalOnThisPlatform
    ) {
        self.init(
            service: service,
            accessGroup: accessGroup,
            accessibility: accessibility,
            reportsMissingReliably: reportsMissingReliably,
            calls: .system
        )
    }
}
#endif
