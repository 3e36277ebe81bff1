public import Habitat

/// A first-class path into a value: how to read one part of it and how to return a copy with
/// that part replaced.
///
/// Build lenses from key paths, compose them with ``appending(_:)``, and reach through
/// optionals with ``optional(_:)``. Every lens built here obeys the three lens laws:
/// - *set-get*: reading what you set gives it back: `l.get(l.set(v, in: r)) == v`;
/// - *get-set*: setting what you read changes nothing: `l.set(l.get(r), in: r) == r`;
/// - *set-set*: the second set wins: `l.set(w, in: l.set(v, in: r)) == l.set(w, in: r)`.
///
/// ```swift
/// let userName = Lens(\HabitatEnvironment<AppSchema>.session).optional(Lens(\.user.name))
/// let renamed = userName.set("Ada", in: env)   // unchanged when logged out
/// let name = userName.get(env)                 // String?
/// ```
public struct Lens<Root, Value>: Sendable {
    /// Reads the focused part of `root`.
    public let get: @Sendable (Root) -> Value
    private let setter: @Sendable (Value, Root) -> Root

    /// Creates a lens from a getter and a setter.
    ///
    /// The pair should obey the lens laws; the laws are what make composed lenses predictable.
    /// - Parameters:
    ///   - get: Reads the focused part.
    ///   - set: Returns a copy of the root with the focused part replaced.
    public init(get: @escaping @Sendable (Root) -> Value, set: @escaping @Sendable (Value, Root) -> Root) {
        self.get = get
        self.setter = set
    }

    /// Creates a lens that focuses on the value at `keyPath`.
    /// - Parameter keyPath: A writable key path from the root to the value.
    public init(_ keyPath: any WritableKeyPath<Root, Value> & Sendable) {
        self.get = { $0[keyPath: keyPath] }
        self.setter = { value, root in
            var copy = root
            copy[keyPath: keyPath] = value
            return copy
        }
    }

    /// Returns a copy of `root` with the focused part set to `value`.
    /// - Parameters:
    ///   - value: The new value.
    ///   - root: The value to copy.
    /// - Returns: The changed copy.
    public func set(_ value: Value, in root: Root) -> Root {
        setter(value, root)
    }

    /// Returns a copy of `root` with the focused part transformed.
    /// - Parameters:
    ///   - root: The value to copy.
    ///   - transform: Returns the new value from the old one.
    /// - Returns: The changed copy.
    public func over(_ root: Root, _ transform: (Value) -> Value) -> Root {
        setter(transform(get(root)), root)
    }

    /// Returns a lens that focuses through this one and then through `next`.
    ///
    /// ```swift
    /// let timeout = Lens(\HabitatEnvironment<AppSchema>.config).appending(Lens(\.timeout))
    /// ```
    /// - Parameter next: A lens into this lens's value.
    /// - Returns: The composed lens.
    public func appending<Next>(_ next: Lens<Value, Next>) -> Lens<Root, Next> {
        let outer = self
        return Lens<Root, Next>(
            get: { next.get(outer.get($0)) },
            set: { value, root in outer.set(next.set(value, in: outer.get(root)), in: root) }
        )
    }
}

extension Lens {
    /// Returns a lens that focuses through an optional value with `next`.
    ///
    /// Reading gives `nil` when this lens's value is `nil`. Setting through `nil`, or setting
    /// `nil`, returns the root unchanged: a lens can't make up the missing value. The laws hold
    /// wherever the optional is present.
    ///
    /// - Parameter next: A lens into the wrapped value.
    /// - Returns: A lens whose value is optional.
    public func optional<Wrapped, Next>(_ next: Lens<Wrapped, Next>) -> Lens<Root, Next?>
    where Value == Wrapped? {
        let outer = self
        return Lens<Root, Next?>(
            get: { outer.get($0).map(next.get) },
            set: { value, root in
                guard let value, let wrapped = outer.get(root) else { return root }
                return outer.set(next.set(value, in: wrapped), in: root)
            }
        )
    }
}

extension Updatable {
    /// Returns a copy with the value `lens` focuses on set to `value`.
    /// - Parameters:
    ///   - lens: Where to write.
    ///   - value: The new value.
    /// - Returns: The changed copy.
    @inlinable
    public func with<Value>(_ lens: Lens<Self, Value>, _ value: Value) -> Self {
        lens.set(value, in: self)
    }

    /// Returns a copy with the value `lens` focuses on transformed.
    /// - Parameters:
    ///   - lens: Where to read and write.
    ///   - transform: Returns the new value from the old one.
    /// - Returns: The changed copy.
    @inlinable
    public func over<Value>(_ lens: Lens<Self, Value>, _ transform: (Value) -> Value) -> Self {
        lens.over(self, transform)
    }
}
