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

/// What the stand-in saw: the last query of each call, for the binding check's assertions.
// Safe: every stored property is read and written only with `lock` held.
public final class StandInKeychain: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [String: (data: Data, accessible: String)] = [:]
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
        items[key] = (attributes["v_Data"] as? Data ?? Data(), "\(attributes["pdmn"] ?? "")")
        return errSecSuccess
    }
}

public func SecItemCopyMatching(_ query: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus {
    StandInKeychain.shared.handle(query) { key, items, _ in
        guard let item = items[key] else { return errSecItemNotFound }
        result?.pointee = item.data as NSData
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
