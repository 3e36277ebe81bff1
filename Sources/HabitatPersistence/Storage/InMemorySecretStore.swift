public import Foundation
import Habitat

/// A ``SecretStore`` in memory, for tests and previews.
public final class InMemorySecretStore: SecretStore {
    private let secrets = LockedBox<[String: Data]>([:])

    /// Creates an empty secret store.
    public init() {}

    public func secret(forKey key: String) throws(StoreError) -> Data? {
        secrets.withLock { $0[key] }
    }

    public func setSecret(_ secret: Data?, forKey key: String) throws(StoreError) {
        secrets.withLock { $0[key] = secret }
    }

    /// The names of the secrets held, for assertions.
    package var keys: [String] {
        secrets.withLock { Array($0.keys) }
    }
}

extension InMemorySecretStore: CustomReflectable {
    /// The names of the secrets held, never their values, so `dump` and reflection-based
    /// printers stay safe.
    public var customMirror: Mirror {
        Mirror(self, children: ["keys": keys.sorted()], displayStyle: .class)
    }
}
