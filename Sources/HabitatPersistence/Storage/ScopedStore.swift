public import Foundation
import Habitat

/// A view of a ``KeyValueStore`` in which every key lives under one namespace, such as a
/// user's ID.
///
/// Keys are stored as `namespace/key` in the underlying store, so one user's data is never read
/// after another user logs in, and `removeAll()` purges exactly one namespace. A `/` or `%`
/// in the namespace is stored percent-encoded, so no namespace reaches into another's (`"a"`
/// with key `"b/c"` and `"a/b"` with key `"c"` stay apart):
///
/// ```swift
/// let drafts = store.scoped(to: "user-\(user.id)")
/// try drafts.set(draft, for: .currentDraft)
/// // at logout:
/// try drafts.removeAll()
/// ```
public struct ScopedStore: KeyValueStore {
    /// The store underneath.
    public let base: any KeyValueStore
    /// The namespace every key is stored under.
    public let namespace: String

    /// Creates a namespaced view of `base`.
    /// - Parameters:
    ///   - base: The store underneath.
    ///   - namespace: The namespace; keys are stored as `namespace/key`.
    public init(base: any KeyValueStore, namespace: String) {
        self.base = base
        self.namespace = namespace
    }

    private var prefix: String {
        namespace.replacingOccurrences(of: "%", with: "%25").replacingOccurrences(of: "/", with: "%2F") + "/"
    }

    public func data(forKey key: String) throws(StoreError) -> Data? {
        try base.data(forKey: prefix + key)
    }

    /// The base's change feed: any change of the base, not only this namespace's.
    /// - Parameter onChange: Called after a change.
    /// - Returns: The base's observation, or `nil` when the base can't tell.
    public func observeChanges(_ onChange: @escaping @Sendable () -> Void) -> StoreObservation? {
        base.observeChanges(onChange)
    }

    public func write(_ changes: [String: Data?]) throws(StoreError) {
        var prefixed: [String: Data?] = [:]
        for (key, data) in changes { prefixed[prefix + key] = data }
        try base.write(prefixed)
    }

    public func keys() throws(StoreError) -> [String] {
        try base.keys().filter { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) }
    }

    /// Removes every key in this namespace, and nothing else, in one write; an empty namespace
    /// writes nothing.
    /// - Throws: The underlying store's errors; nothing is removed then.
    public func removeAll() throws(StoreError) {
        var removals: [String: Data?] = [:]
        for key in try base.keys() where key.hasPrefix(prefix) { removals[key] = .some(nil) }
        if !removals.isEmpty { try base.write(removals) }
    }
}

extension KeyValueStore {
    /// A view of this store in which every key lives under `namespace`.
    /// - Parameter namespace: A name for the partition, such as a user's ID.
    /// - Returns: The namespaced view.
    public func scoped(to namespace: String) -> ScopedStore {
        ScopedStore(base: self, namespace: namespace)
    }
}
