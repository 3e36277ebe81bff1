public import Foundation

/// A ``KeyValueStore`` that keeps its values in memory: for tests, previews and caches.
///
/// ```swift
/// let store = InMemoryStore()
/// try store.set(3, for: StoreKey<Int>("launches"))
/// ```
public final class InMemoryStore: KeyValueStore {
    private let values: LockedBox<[String: Data]>

    /// Creates a store holding `values`.
    /// - Parameter values: The initial contents; empty by default.
    public init(_ values: [String: Data] = [:]) {
        self.values = LockedBox(values)
    }

    public func data(forKey key: String) throws(StoreError) -> Data? {
        values.withLock { $0[key] }
    }

    public func write(_ changes: [String: Data?]) throws(StoreError) {
        values.withLock { values in
            for (key, data) in changes {
                values[key] = data
            }
        }
    }

    public func keys() throws(StoreError) -> [String] {
        values.withLock { Array($0.keys) }
    }

    /// Everything in the store, for assertions.
    package var contents: [String: Data] {
        values.withLock { $0 }
    }
}
