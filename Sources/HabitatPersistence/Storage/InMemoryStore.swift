public import Foundation
import Habitat

/// A ``KeyValueStore`` that keeps its values in memory: for tests, previews and caches.
///
/// ```swift
/// let store = InMemoryStore()
/// try store.set(3, for: StoreKey<Int>("launches"))
/// ```
public final class InMemoryStore: KeyValueStore {
    private let values: LockedBox<[String: Data]>
    /// The change feeds' callbacks, by observation.
    private let observers = LockedBox<[ObjectIdentifier: @Sendable () -> Void]>([:])

    /// Creates a store holding `values`.
    /// - Parameter values: The initial contents; empty by default.
    public init(_ values: [String: Data] = [:]) {
        self.values = LockedBox(values)
    }

    /// Calls `onChange` after each write to this store, on a utility queue.
    /// - Parameter onChange: Called after a write.
    /// - Returns: The observation.
    public func observeChanges(_ onChange: @escaping @Sendable () -> Void) -> StoreObservation? {
        let token = ObservationToken()
        observers.withLock { $0[ObjectIdentifier(token)] = onChange }
        return StoreObservation { [observers] in
            _ = observers.withLock { $0.removeValue(forKey: ObjectIdentifier(token)) }
        }
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
        for observer in observers.withLock({ Array($0.values) }) {
            DispatchQueue.global(qos: .utility).async(execute: observer)
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

/// An observation's identity, alive while it is.
private final class ObservationToken: Sendable {}
