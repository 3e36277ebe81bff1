/// Values that can return changed copies of themselves through key paths.
///
/// ``HabitatEnvironment`` conforms; conform your own value types (a user, a configuration) to get the
/// same updaters on them. The requirements have default implementations, so conforming is one
/// line:
///
/// ```swift
/// extension Account: Updatable {}
///
/// let renamed = account.with(\.name, "Ada")
/// let later = env.over(\.config.timeout) { $0 * 2 }
/// ```
public protocol Updatable {}

extension Updatable {
    /// Returns a copy with the value at `keyPath` set to `value`.
    ///
    /// ```swift
    /// let german = env.with(\.locale, Locale(identifier: "de_DE"))
    /// ```
    /// - Parameters:
    ///   - keyPath: Where to write.
    ///   - value: The new value.
    /// - Returns: The changed copy.
    @inlinable
    public func with<Value>(_ keyPath: WritableKeyPath<Self, Value>, _ value: Value) -> Self {
        var copy = self
        copy[keyPath: keyPath] = value
        return copy
    }

    /// Returns a copy with the value at `keyPath` transformed.
    ///
    /// ```swift
    /// let slow = env.over(\.services.api) { $0.delayed(by: .seconds(2)) }
    /// ```
    /// - Parameters:
    ///   - keyPath: Where to read and write.
    ///   - transform: Returns the new value from the old one.
    /// - Returns: The changed copy.
    /// - Throws: Whatever `transform` throws.
    @inlinable
    public func over<Value, E: Error>(
        _ keyPath: WritableKeyPath<Self, Value>,
        _ transform: (Value) throws(E) -> Value
    ) throws(E) -> Self {
        var copy = self
        copy[keyPath: keyPath] = try transform(copy[keyPath: keyPath])
        return copy
    }
}

extension HabitatEnvironment: Updatable {}
