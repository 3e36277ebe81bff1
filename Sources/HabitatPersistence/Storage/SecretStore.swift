public import Foundation
import Habitat

/// Where an app keeps secrets, such as an access token, apart from its plain data.
///
/// Habitat writes the session's token only through a secret store, never into a
/// ``KeyValueStore``. It ships ``FileSecretStore`` (the default on Linux: owner-only files in an
/// owner-only directory) and ``InMemorySecretStore``; on Apple platforms the `HabitatKeychain`
/// product adds `KeychainSecretStore`. See <doc:PersistenceAndSessions>.
public protocol SecretStore: Sendable {
    /// The secret stored under `key`, or `nil` when there is none.
    ///
    /// Return `nil` only when the store knows there is no such secret. When it can't tell (a
    /// locked device, an I/O error, a denied permission), throw: a ``SessionStore`` then keeps
    /// the session waiting for its token instead of logging the user out. Throw
    /// ``StoreError/unavailable(key:reason:)`` when the secret should be readable later, such
    /// as the Keychain's `errSecInteractionNotAllowed` before the first unlock.
    /// - Parameter key: The secret's name.
    /// - Throws: ``StoreError`` when the secret can't be read.
    func secret(forKey key: String) throws(StoreError) -> Data?

    /// Stores `secret` under `key`, or deletes it when `secret` is `nil`.
    /// - Parameters:
    ///   - secret: The secret, or `nil` to delete it.
    ///   - key: The secret's name.
    /// - Throws: ``StoreError`` when the secret can't be written; nothing changed then.
    func setSecret(_ secret: Data?, forKey key: String) throws(StoreError)

    /// Whether this store's "no such secret" (`nil` from `secret(forKey:)`) can be trusted at
    /// any time.
    ///
    /// `false` for a store that may say "not found" for a secret it holds, as the Keychain can
    /// before the device's first unlock. A ``SessionStore`` over such a store never takes a
    /// missing token for a logout by itself: a saved session whose token it can't find
    /// restores `AuthState.awaitingToken`, nothing is written or deleted, and the app decides
    /// once it knows the store is readable, with
    /// ``Habitat/EnvironmentStack/protectedDataDidBecomeAvailable(for:fileID:line:)``.
    /// `true` by default.
    var reportsMissingReliably: Bool { get }
}

extension SecretStore {
    /// `true`: a store that says "not found" means it.
    public var reportsMissingReliably: Bool { true }
}

/// A secret store that can write without making the write durable at once: a ``SessionStore``'s
/// tidying writes (a rotated token's predecessor dropped, the index trimmed), which a crash may
/// undo harmlessly, the next save or load tidying again. ``FileSecretStore`` skips its
/// directory's flush for them (the file itself is flushed: a crash never leaves it empty).
package protocol TidyingSecretStore: SecretStore {
    /// `setSecret(_:forKey:)`, but a crash may bring back what the key held before, until the
    /// store's next durable write.
    func setSecretTidying(_ secret: Data?, forKey key: String) throws(StoreError)
}

extension FileSecretStore: TidyingSecretStore {}
