public import Foundation

/// A ``SecretStore`` in memory, for tests and previews.
// Safe: `secrets` is read and written only with `lock` held.
public final class InMemorySecretStore: SecretStore, @unchecked Sendable {
    private let lock = Lock()
    private var secrets: [String: Data] = [:]

    /// Creates an empty secret store.
    public init() {}

    public func secret(forKey key: String) throws(StoreError) -> Data? {
        lock.withLock { secrets[key] }
    }

    public func setSecret(_ secret: Data?, forKey key: String) throws(StoreError) {
        lock.withLock { secrets[key] = secret }
    }

    /// The names of the secrets held, for assertions.
    package var keys: [String] {
        lock.withLock { Array(secrets.keys) }
    }
}

extension InMemorySecretStore: CustomReflectable {
    /// The names of the secrets held, never their values, so `dump` and reflection-based
    /// printers stay safe.
    public var customMirror: Mirror {
        Mirror(self, children: ["keys": keys.sorted()], displayStyle: .class)
    }
}
