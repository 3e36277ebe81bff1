precedencegroup HabitatForwardApplication {
    associativity: left
    higherThan: AssignmentPrecedence
}

precedencegroup HabitatFunctionComposition {
    associativity: right
    higherThan: HabitatForwardApplication
}

precedencegroup HabitatLensSetter {
    associativity: left
    higherThan: HabitatFunctionComposition
}

precedencegroup HabitatLensComposition {
    associativity: left
    higherThan: HabitatLensSetter
}

/// Forward application: `x |> f` is `f(x)`.
infix operator |> : HabitatForwardApplication
/// Composes two updates of the same type: `f <> g` applies `f`, then `g`.
infix operator <> : HabitatFunctionComposition
/// Builds an update that sets the focused value: `lens .~ value`.
infix operator .~ : HabitatLensSetter
/// Builds an update that transforms the focused value: `lens %~ transform`.
infix operator %~ : HabitatLensSetter
/// Composes two lenses: `outer .. inner`.
infix operator .. : HabitatLensComposition

/// Applies `transform` to `value`.
///
/// ```swift
/// let test = live |> \.locale .~ Locale(identifier: "en_US_POSIX")
/// ```
/// - Parameters:
///   - value: The input.
///   - transform: The function to apply.
/// - Returns: `transform(value)`.
/// - Throws: Whatever `transform` throws.
@inlinable
public func |> <A, B, E: Error>(value: A, transform: (A) throws(E) -> B) throws(E) -> B {
    try transform(value)
}

/// Returns an update that applies `first`, then `second`.
///
/// ```swift
/// let testSettings = (\.locale .~ posix) <> (\.timeZone .~ utc)
/// let test = live |> testSettings
/// ```
/// - Parameters:
///   - first: The update applied first.
///   - second: The update applied to its result.
/// - Returns: The combined update.
public func <> <A>(
    first: @escaping @Sendable (A) -> A,
    second: @escaping @Sendable (A) -> A
) -> @Sendable (A) -> A {
    { second(first($0)) }
}

/// Returns an update that sets the value `lens` focuses on.
/// - Parameters:
///   - lens: Where to write.
///   - value: The new value.
/// - Returns: A function from a root to its changed copy.
public func .~ <Root, Value: Sendable>(lens: Lens<Root, Value>, value: Value) -> @Sendable (Root) -> Root {
    { lens.set(value, in: $0) }
}

/// Returns an update that sets the value at `keyPath`.
///
/// ```swift
/// let german = env |> \.locale .~ Locale(identifier: "de_DE")
/// ```
/// - Parameters:
///   - keyPath: Where to write.
///   - value: The new value.
/// - Returns: A function from a root to its changed copy.
public func .~ <Root, Value: Sendable>(
    keyPath: any WritableKeyPath<Root, Value> & Sendable,
    value: Value
) -> @Sendable (Root) -> Root {
    Lens(keyPath) .~ value
}

/// Returns an update that transforms the value `lens` focuses on.
/// - Parameters:
///   - lens: Where to read and write.
///   - transform: Returns the new value from the old one.
/// - Returns: A function from a root to its changed copy.
public func %~ <Root, Value>(
    lens: Lens<Root, Value>,
    transform: @escaping @Sendable (Value) -> Value
) -> @Sendable (Root) -> Root {
    { lens.over($0, transform) }
}

/// Returns an update that transforms the value at `keyPath`.
///
/// ```swift
/// let later = env |> \.config.timeout %~ { $0 * 2 }
/// ```
/// - Parameters:
///   - keyPath: Where to read and write.
///   - transform: Returns the new value from the old one.
/// - Returns: A function from a root to its changed copy.
public func %~ <Root, Value>(
    keyPath: any WritableKeyPath<Root, Value> & Sendable,
    transform: @escaping @Sendable (Value) -> Value
) -> @Sendable (Root) -> Root {
    Lens(keyPath) %~ transform
}

/// Composes two lenses: the result focuses through `outer`, then through `inner`.
///
/// ```swift
/// let timeout = Lens(\HabitatEnvironment<AppSchema>.config) .. Lens(\.timeout)
/// ```
/// - Parameters:
///   - outer: The lens into the root.
///   - inner: The lens into `outer`'s value.
/// - Returns: The composed lens.
public func .. <A, B, C>(outer: Lens<A, B>, inner: Lens<B, C>) -> Lens<A, C> {
    outer.appending(inner)
}
