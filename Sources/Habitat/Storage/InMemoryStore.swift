public import Foundation

/// A ``KeyValueStore`` that keeps its values in memory: for tests, previews and caches.
///
/// ```swift
/// let store = InMemoryStore()
/// try store.set(3, for: StoreKey<Int>("launches"))
/// ```
// Safe: `values` is read and written only with `lock` held.
public final class InMemoryStore: KeyValueStore, @unchecked Sendable {
    private let lock = Lock()
    private var values: [String: Data]

    /// Creates a store holding `values`.
    /// - Parameter values: The initial contents; empty by default.
    public init(_ values: [String: Data] = [:]) {
        self.values = values
    }

    public func data(forKey key: String) throws(StoreError) -> Data? {
        lock.withLock { values[key] }
    }

    public func write(_ changes: [String: Data?]) throws(StoreError) {
        lock.withLock {
            for (key, data) in changes {
                values[key] = data
            }
        }
    }

    public func keys() throws(StoreError) -> [String] {
        lock.withLock { Array(values.keys) }
    }

    /// Everything in the store, for assertions.
    package var contents: [String: Data] {
        lock.withLock { values }
    }
}
