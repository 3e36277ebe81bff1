public import Foundation
import Habitat

/// A ``KeyValueStore`` over `UserDefaults`, for apps that already keep settings there.
///
/// Values are stored as `Data` under the given keys, optionally behind a prefix so Habitat's
/// keys don't mix with the app's own.
///
/// ```swift
/// let store = UserDefaultsStore(.standard, prefix: "habitat.")
/// ```
///
/// `UserDefaults` is not a place for secrets: keep tokens in a ``SecretStore``.
// Safe: `UserDefaults` is documented as thread-safe, and the lock makes multi-key writes
// and key listings atomic with respect to each other. Nothing else is mutable.
public final class UserDefaultsStore: KeyValueStore, @unchecked Sendable {
    private let defaults: UserDefaults
    private let prefix: String
    private let lock = LockedBox(())

    /// Creates a store over `defaults`.
    /// - Parameters:
    ///   - defaults: The defaults database to use.
    ///   - prefix: Prepended to every key; empty by default.
    public init(_ defaults: UserDefaults, prefix: String = "") {
        self.defaults = defaults
        self.prefix = prefix
    }

    public func data(forKey key: String) throws(StoreError) -> Data? {
        lock.withLock { defaults.data(forKey: prefix + key) }
    }

    public func write(_ changes: [String: Data?]) throws(StoreError) {
        lock.withLock {
            for (key, data) in changes {
                if let data {
                    defaults.set(data, forKey: prefix + key)
                } else {
                    defaults.removeObject(forKey: prefix + key)
                }
            }
        }
    }

    public func keys() throws(StoreError) -> [String] {
        lock.withLock {
            defaults.dictionaryRepresentation().keys
                .filter { $0.hasPrefix(prefix) && defaults.data(forKey: $0) != nil }
                .map { String($0.dropFirst(prefix.count)) }
        }
    }
}
