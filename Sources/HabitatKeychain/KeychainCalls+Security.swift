// The Apple binding: the four SecItem calls, with an access control and an authentication
// context for protected items, and LocalAuthentication's prompt. Every decision is the store's.
//
// NB: on Linux this file is compiled by the KeychainBindingCheck test target of the package
// Tests/Compatibility against `SecurityStandIn`, a module with Security's Swift signatures, so
// that a mistake here fails CI before it reaches an Apple user (see
// Tests/Compatibility/StandIns/SecurityStandIn).
// NB: on Apple platforms the check target compiles nothing (the real binding is in the library,
// and no test may reach a real keychain).
#if canImport(Security) && !HABITAT_SECURITY_STANDIN
import Foundation
import LocalAuthentication
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
            KeychainCalls.add(item, secret, accessibility, .none)
        },
        copy: { item in
            let (status, result) = KeychainCalls.copyMatching(item, returning: kSecReturnData, nil)
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
        },
        read: { item, authentication in
            let (status, result) = KeychainCalls.copyMatching(item, returning: kSecReturnData, authentication)
            return (status, result as? Data)
        },
        addProtected: { item, secret, accessibility, protection in
            KeychainCalls.add(item, secret, accessibility, protection)
        },
        updateProtected: { item, secret, authentication in
            KeychainCalls.withContext(authentication) { context in
                var search = KeychainCalls.query(item)
                search[kSecUseAuthenticationContext as String] = context
                let changes: [String: Any] = [kSecValueData as String: secret]
                return SecItemUpdate(search as CFDictionary, changes as CFDictionary)
            }
        },
        protection: { item in
            // NB: the attributes only: an item's access control guards its data, not them.
            let (status, result) = KeychainCalls.copyMatching(item, returning: kSecReturnAttributes, nil)
            let marker = (result as? [String: Any])?[kSecAttrGeneric as String] as? Data
            return (status, marker.flatMap { KeychainProtection(rawValue: String(decoding: $0, as: UTF8.self)) } ?? .none)
        },
        authenticate: { reason, protection in
            let context = LAContext()
            // NB: user presence takes biometry or the passcode; which one answered isn't told,
            // so it counts as the passcode (biometry-only items need `.biometryAny`'s prompt).
            // NB: spelled here, not through the store's package helper: this file is also built
            // in the Compatibility package, which sees only the public API.
            let biometryOnly = protection == .biometryAny || protection == .biometryCurrentSet
            let policy: LAPolicy = biometryOnly ? .deviceOwnerAuthenticationWithBiometrics : .deviceOwnerAuthentication
            var unavailable: NSError?
            guard context.canEvaluatePolicy(policy, error: &unavailable) else { return .failure(.notAvailable) }
            do {
                _ = try await context.evaluatePolicy(policy, localizedReason: reason)
            } catch let error as LAError {
                return .failure(KeychainUnlockError(error))
            } catch {
                return .failure(.failed(status: -1, message: "\(error)"))
            }
            return .success(KeychainAuthentication(method: biometryOnly ? .biometry : .passcode, context: context))
        },
        invalidate: { authentication in
            authentication.withContext { ($0 as? LAContext)?.invalidate() }
        }
    )

    /// `SecItemAdd` of `item`, with an access control for `protection` (and a marker of it in
    /// `kSecAttrGeneric`, which `protection` reads back), or its accessibility class alone.
    private static func add(_ item: KeychainItem, _ secret: Data, _ accessibility: KeychainAccessibility, _ protection: KeychainProtection) -> OSStatus {
        var attributes = query(item)
        attributes[kSecValueData as String] = secret
        guard let flags = protection.accessControlFlags else {
            attributes[kSecAttrAccessible as String] = accessibility.systemValue
            return SecItemAdd(attributes as CFDictionary, nil)
        }
        guard let control = SecAccessControlCreateWithFlags(nil, accessibility.systemValue, flags, nil) else {
            return KeychainStatus.unimplemented
        }
        attributes[kSecAttrAccessControl as String] = control
        attributes[kSecAttrGeneric as String] = Data(protection.rawValue.utf8)
        return SecItemAdd(attributes as CFDictionary, nil)
    }

    /// `SecItemCopyMatching` of `item`, returning its data or its attributes (`returning`),
    /// with the authentication's context or one that never prompts.
    private static func copyMatching(_ item: KeychainItem, returning: CFString, _ authentication: KeychainAuthentication?) -> (OSStatus, CFTypeRef?) {
        var search = query(item)
        search[returning as String] = true
        search[kSecMatchLimit as String] = kSecMatchLimitOne
        return withContext(authentication) { context in
            search[kSecUseAuthenticationContext as String] = context
            var result: CFTypeRef?
            let status = SecItemCopyMatching(search as CFDictionary, &result)
            return (status, result)
        }
    }

    /// Runs `body` with the authentication's evaluated context, or, without one, a context
    /// that never prompts: a read that would need the user fails with
    /// `errSecInteractionNotAllowed` instead.
    private static func withContext<R>(_ authentication: KeychainAuthentication?, _ body: (LAContext) -> R) -> R {
        if let authentication, let result = authentication.withContext({ ($0 as? LAContext).map(body) }) {
            return result
        }
        let context = LAContext()
        context.interactionNotAllowed = true
        return body(context)
    }

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

extension KeychainProtection {
    /// The access control's flags; `nil` for none.
    fileprivate var accessControlFlags: SecAccessControlCreateFlags? {
        switch self {
        case .none: nil
        case .userPresence: .userPresence
        case .biometryAny: .biometryAny
        case .biometryCurrentSet: .biometryCurrentSet
        }
    }
}

extension KeychainUnlockError {
    /// The error for a failed prompt.
    fileprivate init(_ error: LAError) {
        switch error.code {
        case .userCancel, .appCancel, .systemCancel, .userFallback: self = .cancelled
        case .notInteractive: self = .notInteractive
        case .authenticationFailed: self = .denied
        case .biometryNotAvailable, .biometryNotEnrolled, .passcodeNotSet: self = .notAvailable
        default: self = .failed(status: Int32(truncatingIfNeeded: error.code.rawValue), message: error.localizedDescription)
        }
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
    ///   - promptPolicy: When an unlock of protected items asks the user again; once per launch
    ///     by default.
    public convenience init(
        service: String? = nil,
        accessGroup: String? = nil,
        accessibility: KeychainAccessibility = .afterFirstUnlockThisDeviceOnly,
        reportsMissingReliably: Bool = KeychainSecretStore.notFoundIsFinalOnThisPlatform,
        promptPolicy: KeychainPromptPolicy = .oncePerLaunch
    ) {
        self.init(
            service: service,
            accessGroup: accessGroup,
            accessibility: accessibility,
            reportsMissingReliably: reportsMissingReliably,
            promptPolicy: promptPolicy,
            calls: .system
        )
    }
}
#endif
