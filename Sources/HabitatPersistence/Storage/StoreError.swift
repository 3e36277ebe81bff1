public import Foundation
import Habitat

/// Why a store could not read or write.
///
/// Every case names the file or key involved, and none ever carries a stored value: a store
/// error is safe to log even when the store holds secrets.
public enum StoreError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The file is not a store document (not JSON, or not this store's format). It was moved
    /// aside to `movedTo` and the store now starts empty; nothing was overwritten.
    case corrupted(path: String, movedTo: String, reason: String)
    /// The file exists but could not be read (permissions, I/O error).
    case unreadable(path: String, reason: String)
    /// The file or its directory could not be written (read-only, missing, full disk).
    /// The store's contents are as they were before the write.
    case unwritable(path: String, reason: String)
    /// The directory the store should live in does not exist, and the store was told not to
    /// create it.
    case missingDirectory(path: String)
    /// A directory the store relies on could be changed by someone else: it is a symbolic link,
    /// not owned by this user, or writable by group or others. Nothing was read or written.
    case untrustedDirectory(path: String, reason: String)
    /// A store file is not a regular file (`found` says what it is: a symbolic link, a FIFO, a
    /// device...). It is neither read nor replaced.
    case notARegularFile(path: String, found: String)
    /// The store can't be used right now, though what it holds is still there: a locked
    /// device's Keychain, a secret service that isn't running. Try again later; never take it
    /// for "nothing stored".
    case unavailable(key: String, reason: String)
    /// A file, or the document a write would produce, is larger than the store's limit.
    /// Nothing was read into memory, or written.
    case tooLarge(path: String, size: Int, limit: Int)
    /// The value for `key` nests deeper than a store document can hold (`limit` levels); the
    /// write was refused and nothing changed.
    case valueTooDeep(key: String, limit: Int)
    /// A value could not be encoded for `key`.
    case encodingFailed(key: String, reason: String)
    /// The value stored under `key` could not be decoded as the requested type.
    case decodingFailed(key: String, reason: String)
    /// The app lacks the entitlement the store needs (the Keychain's `errSecMissingEntitlement`,
    /// -34018): `fix` says what to add to the app's signing. Nothing was read or written.
    case missingEntitlement(key: String, fix: String)
    /// The system refused the operation on `key` with `status` (an `OSStatus` for the Keychain)
    /// and `message`, the system's own words. Nothing was changed.
    case systemStatus(key: String, status: Int32, message: String)
    /// The secret under `key` can never be read again: it was protected by the biometry enrolled
    /// when it was written (`KeychainProtection.biometryCurrentSet`), and a face or finger was
    /// added or removed since. The item was deleted; a session whose token it held is signed
    /// out with this reason (sign in again), never left waiting for it.
    case protectionInvalidated(key: String, reason: String)

    /// A one-line message that names the file or key.
    public var description: String {
        switch self {
        case .corrupted(let path, let movedTo, let reason):
            "\(path) is corrupted (\(reason)); the bad copy was kept at \(movedTo)"
        case .unreadable(let path, let reason):
            "cannot read \(path): \(reason)"
        case .unwritable(let path, let reason):
            "cannot write \(path): \(reason)"
        case .missingDirectory(let path):
            "the directory \(path) does not exist"
        case .untrustedDirectory(let path, let reason):
            "refusing to use the directory \(path): \(reason)"
        case .notARegularFile(let path, let found):
            "refusing to open \(path): it is \(found), not a regular file"
        case .unavailable(let key, let reason):
            "cannot reach '\(key)' right now: \(reason)"
        case .tooLarge(let path, let size, let limit):
            "\(path) is too large (\(size) bytes; the limit is \(limit))"
        case .valueTooDeep(let key, let limit):
            "the value for key '\(key)' nests deeper than \(limit) levels, more than a store document holds"
        case .encodingFailed(let key, let reason):
            "cannot encode the value for key '\(key)': \(reason)"
        case .decodingFailed(let key, let reason):
            "cannot decode the value for key '\(key)': \(reason)"
        case .missingEntitlement(let key, let fix):
            "the app is not entitled to store '\(key)': \(fix)"
        case .systemStatus(let key, let status, let message):
            "the system refused '\(key)' with status \(status): \(message)"
        case .protectionInvalidated(let key, let reason):
            "'\(key)' can't be read any more: \(reason); sign in again"
        }
    }
}

extension StoreError {
    /// Whether the item is there but can never be read as it is (a link, a FIFO or a device in
    /// place of a file, or a file over the limit): no secret in it can be kept, and writing the
    /// key again replaces it.
    var isDamagedItem: Bool {
        switch self {
        case .notARegularFile, .tooLarge: true
        default: false
        }
    }
}

extension StoreError: LocalizedError {
    /// The same one-line message as `description`, so `localizedDescription` shows it too.
    public var errorDescription: String? { description }
}
