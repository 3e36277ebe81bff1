// Linux only: on Apple platforms the real Security framework is there, and tests never reach it.
#if !canImport(Security)
// Stands in for Apple's Security framework on Linux, with the Swift signatures HabitatKeychain's
// binding uses, so that the binding type-checks (and runs, against a dictionary) in CI. Only
// the declarations the binding needs; the constants carry Security's real string values.
public import Foundation

public typealias OSStatus = Int32
public typealias CFString = NSString
public typealias CFDictionary = NSDictionary
public typealias CFTypeRef = AnyObject

// NB: `nonisolated(unsafe)` because NSString isn't Sendable on Linux; these strings are never
// mutated (the SDK's CFString constants are Sendable).
public let errSecSuccess: OSStatus = 0
public let errSecItemNotFound: OSStatus = -25300
public let errSecDuplicateItem: OSStatus = -25299

nonisolated(unsafe) public let kSecClass: CFString = "class"
nonisolated(unsafe) public let kSecClassGenericPassword: CFString = "genp"
nonisolated(unsafe) public let kSecAttrService: CFString = "svce"
nonisolated(unsafe) public let kSecAttrAccount: CFString = "acct"
nonisolated(unsafe) public let kSecAttrAccessGroup: CFString = "agrp"
nonisolated(unsafe) public let kSecAttrAccessible: CFString = "pdmn"
nonisolated(unsafe) public let kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly: CFString = "cku"
nonisolated(unsafe) public let kSecAttrAccessibleWhenUnlockedThisDeviceOnly: CFString = "aku"
nonisolated(unsafe) public let kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly: CFString = "akpu"
nonisolated(unsafe) public let kSecUseDataProtectionKeychain: CFString = "nleg"
nonisolated(unsafe) public let kSecValueData: CFString = "v_Data"
nonisolated(unsafe) public let kSecReturnData: CFString = "r_Data"
nonisolated(unsafe) public let kSecMatchLimit: CFString = "m_Limit"
nonisolated(unsafe) public let kSecMatchLimitOne: CFString = "m_LimitOne"
nonisolated(unsafe) public let kSecReturnAttributes: CFString = "r_Attributes"
nonisolated(unsafe) public let kSecAttrGeneric: CFString = "gena"
nonisolated(unsafe) public let kSecAttrAccessControl: CFString = "accc"
nonisolated(unsafe) public let kSecUseAuthenticationContext: CFString = "u_AuthCtx"

/// An item's access control (`SecAccessControl`): here, its flags.
public final class SecAccessControl: Sendable {
    public let flags: SecAccessControlCreateFlags
    init(flags: SecAccessControlCreateFlags) { self.flags = flags }
}

public struct SecAccessControlCreateFlags: OptionSet, Sendable {
    public let rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }
    public static let userPresence = SecAccessControlCreateFlags(rawValue: 1 << 0)
    public static let biometryAny = SecAccessControlCreateFlags(rawValue: 1 << 1)
    public static let biometryCurrentSet = SecAccessControlCreateFlags(rawValue: 1 << 3)
}

public func SecAccessControlCreateWithFlags(
    _ allocator: AnyObject?,
    _ protection: CFTypeRef,
    _ flags: SecAccessControlCreateFlags,
    _ error: UnsafeMutablePointer<Unmanaged<NSError>?>?
) -> SecAccessControl? {
    SecAccessControl(flags: flags)
}

// LocalAuthentication's prompt, standing in: no prompt can be shown on Linux.
public enum LAPolicy: Int, Sendable {
    case deviceOwnerAuthenticationWithBiometrics = 1
    case deviceOwnerAuthentication = 2
}

public struct LAError: Error, Sendable {
    public enum Code: Int, Sendable {
        case authenticationFailed = -1, userCancel = -2, userFallback = -3, systemCancel = -4, passcodeNotSet = -5
        case biometryNotAvailable = -6, biometryNotEnrolled = -7, biometryLockout = -8, appCancel = -9, invalidContext = -10
        case notInteractive = -1004
    }
    public let code: Code
}

public final class LAContext {
    public var interactionNotAllowed = false
    public private(set) var isInvalidated = false
    public init() {}
    public func canEvaluatePolicy(_ policy: LAPolicy, error: UnsafeMutablePointer<NSError?>?) -> Bool { true }
    public func evaluatePolicy(_ policy: LAPolicy, localizedReason: String) async throws -> Bool {
        throw LAError(code: .notInteractive)
    }
    public func invalidate() { isInvalidated = true }
}

/// What the stand-in saw: the last query of each call, for the binding check's assertions.
// Safe: every stored property is read and written only with `lock` held.
public final class StandInKeychain: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [String: (data: Data, accessible: String)] = [:]
    fileprivate var generic: [String: Data] = [:]
    private var queries: [[String: String]] = []

    public static let shared = StandInKeychain()

    /// The string attributes of every query so far, in order.
    public var log: [[String: String]] { lock.withLock { queries } }

    /// The accessibility class of the item under `account`, if any.
    public func accessibility(ofAccount account: String) -> String? {
        lock.withLock { items.first { $0.key.split(separator: "/").dropFirst(2).first.map(String.init) == account }?.value.accessible }
    }

    func handle(_ query: NSDictionary, _ body: (String, inout [String: (data: Data, accessible: String)], [String: Any]) -> OSStatus) -> OSStatus {
        var attributes: [String: Any] = [:]
        for case let (key as String, value) in query { attributes[key] = value }
        let key = ["class", "svce", "acct", "agrp"].map { attributes[$0].map { "\($0)" } ?? "-" }.joined(separator: "/")
        return lock.withLock {
            queries.append(attributes.compactMapValues { $0 as? String ?? ($0 as? NSString).map { $0 as String } })
            return body(key, &items, attributes)
        }
    }
}

public func SecItemAdd(_ attributes: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus {
    StandInKeychain.shared.handle(attributes) { key, items, attributes in
        guard items[key] == nil else { return errSecDuplicateItem }
        let protected = attributes["accc"] is SecAccessControl
        items[key] = (attributes["v_Data"] as? Data ?? Data(), protected ? "accc" : "\(attributes["pdmn"] ?? "")")
        StandInKeychain.shared.generic[key] = attributes["gena"] as? Data
        return errSecSuccess
    }
}

public func SecItemCopyMatching(_ query: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus {
    StandInKeychain.shared.handle(query) { key, items, attributes in
        guard let item = items[key] else { return errSecItemNotFound }
        if attributes["r_Attributes"] != nil {
            result?.pointee = ["gena": StandInKeychain.shared.generic[key] ?? Data()] as NSDictionary
        } else {
            result?.pointee = item.data as NSData
        }
        return errSecSuccess
    }
}

public func SecItemUpdate(_ query: CFDictionary, _ attributesToUpdate: CFDictionary) -> OSStatus {
    let changes = attributesToUpdate as? [String: Any] ?? [:]
    return StandInKeychain.shared.handle(query) { key, items, _ in
        guard items[key] != nil else { return errSecItemNotFound }
        items[key] = (changes["v_Data"] as? Data ?? Data(), "\(changes["pdmn"] ?? "")")
        return errSecSuccess
    }
}

public func SecItemDelete(_ query: CFDictionary) -> OSStatus {
    StandInKeychain.shared.handle(query) { key, items, _ in
        items.removeValue(forKey: key) == nil ? errSecItemNotFound : errSecSuccess
    }
}

public func SecCopyErrorMessageString(_ status: OSStatus, _ reserved: UnsafeMutableRawPointer?) -> CFString? {
    status == errSecItemNotFound ? "The specified item could not be found in the keychain." : nil
}
#endif
