import Foundation

/// A value behind a lock: this package's one lock-guarded box (Habitat's own is
/// package-visible to Habitat's package only). `withLock` is the only way to the value.
///
/// NB: `NSLock`, not `Synchronization.Mutex`, whose futex the thread sanitizer can't see (it
/// reports false races).
package final class LockedBox<Value> {
    private let lock = NSLock()
    private var value: Value

    package init(_ value: Value) {
        self.value = value
    }

    /// Runs `body` with the lock held, on the value in place.
    package func withLock<R, E: Error>(_ body: (inout Value) throws(E) -> R) throws(E) -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}

// Safe: `value` is reached only through `withLock`, with `lock` held.
extension LockedBox: @unchecked Sendable where Value: Sendable {}
