public import Foundation
import Habitat

/// Why a session snapshot could not be saved or restored.
///
/// When one of these is thrown, the stack is as it was, and the stored data is untouched.
public enum SnapshotError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The underlying store failed.
    case store(StoreError)
    /// The snapshot under `key` was written by a newer version of the app.
    case unsupportedVersion(key: String, found: Int, newest: Int)
    /// No migration is registered from `version` to the next version.
    case missingMigration(key: String, from: Int)
    /// The migration from `version` failed.
    case migrationFailed(key: String, from: Int, reason: String)
    /// The snapshot under `key` is not a valid snapshot.
    case invalidSnapshot(key: String, reason: String)

    /// A one-line message that names the key or file, never a secret.
    public var description: String {
        switch self {
        case .store(let error):
            error.description
        case .unsupportedVersion(let key, let found, let newest):
            "the snapshot '\(key)' has version \(found), newer than the newest this app reads (\(newest)); it was left untouched"
        case .missingMigration(let key, let from):
            "the snapshot '\(key)' has version \(from) and no migration from it is registered"
        case .migrationFailed(let key, let from, let reason):
            "migrating the snapshot '\(key)' from version \(from) failed: \(reason)"
        case .invalidSnapshot(let key, let reason):
            "the snapshot '\(key)' is not valid: \(reason)"
        }
    }
}

extension SnapshotError: LocalizedError {
    /// The same one-line message as `description`, so `localizedDescription` shows it too.
    public var errorDescription: String? { description }
}

extension SnapshotError {
    /// Runs `body`, a call to a store, its error a ``store(_:)`` error.
    static func fromStore<R>(_ body: () throws(StoreError) -> R) throws(SnapshotError) -> R {
        do { return try body() } catch { throw .store(error) }
    }
}
