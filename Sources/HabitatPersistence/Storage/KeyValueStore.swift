public import Foundation
import Habitat

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

    /// Calls `onChange` whenever the store's contents may have changed, by this process or
    /// another, until the returned observation is stopped: the store's change feed.
    ///
    /// A follower of the store (``Habitat/EnvironmentStack/followStore(_:checkingEvery:)``) uses it
    /// instead of polling. ``JSONFileStore`` watches its file through the kernel (inotify on
    /// Linux, a directory source on Apple platforms), ``InMemoryStore`` calls back after its own
    /// writes, ``ScopedStore`` forwards its base's feed. The default, for a store that can't
    /// tell, returns `nil`: followers then poll. `onChange` may be called for changes that
    /// don't alter anything, and calls may be coalesced; it runs on a queue of the store's.
    /// - Parameter onChange: Called after a change.
    /// - Returns: The running observation, or `nil` when the store can't tell.
    func observeChanges(_ onChange: @escaping @Sendable () -> Void) -> StoreObservation?
}

/// A running change feed of a store (``KeyValueStore/observeChanges(_:)``): it stops when
/// stopped or released.
public final class StoreObservation: Sendable {
    private let stopping: LockedBox<(@Sendable () -> Void)?>

    /// Creates an observation that runs `stop` once, when stopped or released.
    /// - Parameter stop: Ends the feed.
    public init(stop: @escaping @Sendable () -> Void) {
        stopping = LockedBox(stop)
    }

    /// Ends the feed: `onChange` is not called after this returns, except by a call already
    /// under way.
    public func stop() {
        stopping.withLock { $0.take() }?()
    }

    deinit { stop() }
}

extension KeyValueStore {
    /// `nil`: a store that can't tell when it changes; its followers poll.
    /// - Parameter onChange: Never called.
    /// - Returns: `nil`.
    public func observeChanges(_ onChange: @escaping @Sendable () -> Void) -> StoreObservation? {
        nil
    }

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
