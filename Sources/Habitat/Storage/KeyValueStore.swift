public import Foundation

/// A place to keep small values across launches: `Data` under string keys.
///
/// Habitat ships ``InMemoryStore`` (tests and previews), ``JSONFileStore`` (one JSON document
/// on disk, written atomically) and ``UserDefaultsStore``. Most code uses the typed layer on
/// top, ``StoreKey``, so a key's name and type are spelled once:
///
/// ```swift
/// extension StoreKey where Value == Bool {
///     static let onboardingDone = StoreKey("onboardingDone")
/// }
///
/// try store.set(true, for: .onboardingDone)
/// let done = try store[.onboardingDone] ?? false
/// ```
///
/// Conforming types must be safe to use from any thread.
public protocol KeyValueStore: Sendable {
    /// The data stored under `key`, or `nil` when there is none.
    /// - Parameter key: The key to read.
    /// - Throws: ``StoreError`` when the store can't be read.
    func data(forKey key: String) throws(StoreError) -> Data?

    /// Applies several writes as one: afterwards all of them are visible, or, when it throws,
    /// none of them.
    ///
    /// - Parameter changes: For each key, the new data, or `nil` to remove the key.
    /// - Throws: ``StoreError`` when the store can't be written; nothing changed then.
    func write(_ changes: [String: Data?]) throws(StoreError)

    /// Every key that has a value.
    /// - Throws: ``StoreError`` when the store can't be read.
    func keys() throws(StoreError) -> [String]
}

extension KeyValueStore {
    /// Stores `data` under `key`, or removes the key when `data` is `nil`.
    /// - Parameters:
    ///   - data: The new data, or `nil` to remove the key.
    ///   - key: The key to write.
    /// - Throws: ``StoreError`` when the store can't be written; nothing changed then.
    public func setData(_ data: Data?, forKey key: String) throws(StoreError) {
        try write([key: data])
    }

    /// Removes the value under `key`, if any.
    /// - Parameter key: The key to remove.
    /// - Throws: ``StoreError`` when the store can't be written.
    public func removeValue(forKey key: String) throws(StoreError) {
        try write([key: nil])
    }
}
