import Habitat

/// Who must be present to read a Keychain item, beyond the device being unlocked: the item's
/// access control (`SecAccessControl`), set per account's token with
/// ``KeychainSecretStore/setProtection(_:forKey:)`` or `SessionStore.setProtection(_:forAccount:)`.
public enum KeychainProtection: String, Sendable, Hashable, CaseIterable {
    /// The device's lock state only (the store's ``KeychainAccessibility``). The default.
    case none
    /// Face ID, Touch ID or Optic ID, or the device passcode (`.userPresence`): the user can
    /// always get in, with the passcode when biometry fails or isn't set up.
    case userPresence
    /// Biometry only, any face or finger enrolled now or later (`.biometryAny`): no passcode
    /// fallback; a device without biometry can't read the item.
    case biometryAny
    /// Biometry only, the faces and fingers enrolled when the item was written
    /// (`.biometryCurrentSet`): a face or finger added or removed makes the item unreadable for
    /// good, and the account is signed out with `StoreError.protectionInvalidated(key:reason:)`.
    case biometryCurrentSet

    /// Whether a prompt that proved `method` opens an item protected this way.
    package func isSatisfied(by method: KeychainAuthentication.Method) -> Bool {
        !needsBiometry || method == .biometry
    }

    /// Whether only a face or finger opens it (no passcode fallback).
    package var needsBiometry: Bool { self == .biometryAny || self == .biometryCurrentSet }
}

/// When a ``KeychainSecretStore`` asks the user again, once it was unlocked
/// (``KeychainSecretStore/unlock(reason:for:)``).
///
/// Reads never prompt: a protected token is read with the authentication of the last unlock
/// while the policy lets it be used, and is otherwise unavailable (the account waits for it, as
/// on a locked device). Only ``KeychainSecretStore/unlock(reason:for:)`` prompts.
public enum KeychainPromptPolicy: Sendable, Hashable {
    /// Every unlock prompts; its authentication is used until ``KeychainSecretStore/lock()``.
    case everyUnlock
    /// One prompt per launch: an unlock reuses the last authentication until
    /// ``KeychainSecretStore/lock()``. The default.
    case oncePerLaunch
    /// One prompt per window: an unlock within `duration` of the last prompt reuses it, and
    /// protected reads stop once the window has passed (banking apps ask again after a few
    /// minutes).
    case within(Duration)
}

/// What an unlock's prompt proved, and the system's context that lets later reads use it
/// without asking again (an `LAContext` on Apple platforms).
public final class KeychainAuthentication: Sendable {
    /// How the user was recognised.
    public enum Method: Sendable, Hashable {
        /// Face ID, Touch ID or Optic ID.
        case biometry
        /// The device passcode.
        case passcode
    }

    /// How the user was recognised.
    public let method: Method
    /// The system's context, reached only under its lock; `nil` in a model.
    private let context: LockedBox<SystemContext>

    /// An authentication.
    /// - Parameters:
    ///   - method: How the user was recognised.
    ///   - context: The system's evaluated context (an `LAContext`), handed back to the calls
    ///     that read and write with it; `nil` in a model.
    public init(method: Method, context: AnyObject? = nil) {
        self.method = method
        self.context = LockedBox(SystemContext(object: context))
    }

    /// Runs `body` on the system's context, with its lock held.
    public func withContext<R>(_ body: (AnyObject?) -> R) -> R {
        context.withLock { body($0.object) }
    }
}

// NB: the context is reached only through `withContext`, under the box's lock, so it is used by
// one thread at a time.
private struct SystemContext: @unchecked Sendable {
    let object: AnyObject?
}

/// Why ``KeychainSecretStore/unlock(reason:for:)`` didn't unlock. The store stays locked; a
/// protected token stays unavailable (its account waits for it, never signed out).
public enum KeychainUnlockError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The user wasn't recognised.
    case denied
    /// The user, or the system, cancelled the prompt.
    case cancelled
    /// No prompt can be shown here: the app is in the background, or this is an extension.
    case notInteractive
    /// The device can't check this protection: no biometry enrolled, or no passcode set.
    case notAvailable
    /// Any other status from the system.
    case failed(status: Int32, message: String)

    public var description: String {
        switch self {
        case .denied: "the user was not recognised"
        case .cancelled: "the prompt was cancelled"
        case .notInteractive: "no prompt can be shown here (the app is in the background, or this is an extension): unlock from the foreground"
        case .notAvailable: "this device can't check the protection (no biometry enrolled, or no passcode set)"
        case .failed(let status, let message): "the unlock failed with status \(status): \(message)"
        }
    }
}
