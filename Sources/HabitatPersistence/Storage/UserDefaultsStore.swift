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
///
/// It has a change feed (``observeChanges(_:)``), so a stack that follows it is told at once and
/// wakes for nothing in between: every write through a `UserDefaultsStore` with the same prefix
/// signals it, in any process of the device on Apple platforms (an app and its extensions sharing
/// an app group's suite) and in this process elsewhere; on Apple platforms, so does any change
/// this process makes to its defaults past the store (`UserDefaults.didChangeNotification`: a
/// settings screen that resets them).
// Safe: `UserDefaults` is documented as thread-safe, and the lock makes multi-key writes
// and key listings atomic with respect to each other. Nothing else is mutable.
public final class UserDefaultsStore: KeyValueStore, @unchecked Sendable {
    private let defaults: UserDefaults
    private let prefix: String
    private let lock = LockedBox(())
    private let signal: ChangeSignal

    /// Creates a store over `defaults`.
    /// - Parameters:
    ///   - defaults: The defaults database to use.
    ///   - prefix: Prepended to every key; empty by default.
    public init(_ defaults: UserDefaults, prefix: String = "") {
        self.defaults = defaults
        self.prefix = prefix
        self.signal = ChangeSignal(store: "defaults:" + prefix)
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
        signal.post()
    }

    /// Calls `onChange` after every write through a store with this prefix (in any process on
    /// Apple platforms, in this one elsewhere) and, on Apple platforms, after any change this
    /// process makes to its defaults, until the observation stops.
    /// - Parameter onChange: Called on a utility queue (for a change made past the store, on the
    ///   thread that made it); it should only schedule work.
    /// - Returns: The observation, or `nil` when the system refuses one (followers poll then).
    public func observeChanges(_ onChange: @escaping @Sendable () -> Void) -> StoreObservation? {
        guard let signalled = signal.observe(onChange) else { return nil }
        #if canImport(Darwin)
        // NB: any defaults object: another instance of the same suite posts with itself.
        // `removeObserver` may be called from any thread.
        nonisolated(unsafe) let observer = NotificationCenter.default.addObserver(
            forName: UserDefaults.didChangeNotification, object: nil, queue: nil
        ) { _ in onChange() }
        return StoreObservation {
            signalled.stop()
            NotificationCenter.default.removeObserver(observer)
        }
        #else
        return signalled
        #endif
    }

    public func keys() throws(StoreError) -> [String] {
        lock.withLock {
            defaults.dictionaryRepresentation().keys
                .filter { $0.hasPrefix(prefix) && defaults.data(forKey: $0) != nil }
                .map { String($0.dropFirst(prefix.count)) }
        }
    }
}
