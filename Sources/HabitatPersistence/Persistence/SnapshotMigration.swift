public import Foundation
import Habitat

/// Moves a snapshot from one version to the next.
///
/// A migration receives the whole snapshot document as JSON (`{"version": N, "payload":
/// {"session": {"user": ..., ...}, "config": ...}}`) and returns the document for version
/// `from + 1`. Habitat chains migrations to reach the current version.
///
/// ```swift
/// // Version 2 renamed the user's "fullName" to "name".
/// let renameFullName = SnapshotMigration(from: 1) { data in
///     guard var document = try JSONSerialization.jsonObject(with: data) as? [String: Any],
///           var payload = document["payload"] as? [String: Any]
///     else { throw MigrationError.notASnapshot }
///     if var session = payload["session"] as? [String: Any], var user = session["user"] as? [String: Any] {
///         user["name"] = user.removeValue(forKey: "fullName")
///         session["user"] = user
///         payload["session"] = session
///     }
///     document["payload"] = payload
///     return try JSONSerialization.data(withJSONObject: document)
/// }
/// ```
public struct SnapshotMigration: Sendable {
    /// The version this migration reads; it produces version `from + 1`.
    public let from: Int
    /// Transforms the snapshot document.
    public let migrate: @Sendable (Data) throws -> Data

    /// Creates a migration.
    /// - Parameters:
    ///   - from: The version it reads.
    ///   - migrate: Returns the document for the next version.
    public init(from: Int, migrate: @escaping @Sendable (Data) throws -> Data) {
        self.from = from
        self.migrate = migrate
    }
}
