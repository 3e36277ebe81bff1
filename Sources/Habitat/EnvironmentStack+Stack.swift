extension EnvironmentStack {
    /// Pushes `environment` on top of the stack.
    ///
    /// ```swift
    /// AppEnvironment.push(HabitatEnvironment(services: .mock, config: .test))
    /// defer { AppEnvironment.pop() }
    /// ```
    /// - Parameter environment: The new current environment.
    /// - Complexity: Amortized O(1).
    @inlinable
    public func push(_ environment: HabitatEnvironment<App>) {
        withActiveState { $0.push { $0 = environment } }
    }

    /// Pushes a changed copy of the current environment.
    ///
    /// ```swift
    /// AppEnvironment.push { $0.locale = Locale(identifier: "de_DE") }
    /// ```
    ///
    /// The change is atomic: it is applied to the top as it is when the push commits. If another
    /// writer changes the stack while `change` runs, `change` runs again on the newer top, so
    /// keep it free of side effects.
    ///
    /// - Parameter change: Changes the copy that becomes the new top.
    /// - Throws: Whatever `change` throws; nothing is pushed then.
    @inlinable
    public func push<E: Error>(_ change: (inout HabitatEnvironment<App>) throws(E) -> Void) throws(E) {
        try withActiveState { (state) throws(E) in try state.push(change) }
    }

    /// Removes the top environment and returns it.
    ///
    /// The base is never popped: on a stack (or scope) with only its base left, `pop()` returns
    /// `nil` and changes nothing.
    ///
    /// - Returns: The removed environment, or `nil` when only the base is left.
    @inlinable @discardableResult
    public func pop() -> HabitatEnvironment<App>? {
        withActiveState { $0.pop() }
    }

    /// Replaces the top environment with `environment`.
    ///
    /// On a stack with only its base, this replaces the base.
    /// - Parameter environment: The new current environment.
    @inlinable
    public func replaceCurrent(_ environment: HabitatEnvironment<App>) {
        withActiveState { $0.update(.replace) { $0 = environment; return true } }
    }

    /// Replaces the top environment with a changed copy of it, atomically.
    ///
    /// ```swift
    /// AppEnvironment.replaceCurrent { $0.timeZone = TimeZone(identifier: "Europe/Berlin")! }
    /// ```
    ///
    /// If another writer changes the stack while `change` runs, `change` runs again on the newer
    /// top, so keep it free of side effects.
    ///
    /// - Parameter change: Changes the copy that replaces the top.
    /// - Throws: Whatever `change` throws; nothing changes then.
    @inlinable
    public func replaceCurrent<E: Error>(_ change: (inout HabitatEnvironment<App>) throws(E) -> Void) throws(E) {
        try withActiveState { (state) throws(E) in
            try state.update(.replace) { (environment) throws(E) in
                try change(&environment)
                return true
            }
        }
    }
}
