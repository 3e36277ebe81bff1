extension EnvironmentStack {
    /// Pushes `environment` on top of the stack.
    ///
    /// ```swift
    /// appEnvironment.push(HabitatEnvironment(services: .mock, config: .test))
    /// defer { appEnvironment.pop() }
    /// ```
    /// - Parameters:
    ///   - environment: The new current environment.
    ///   - label: A label for the frame, shown by ``frames`` and in the change it publishes.
    ///   - fileID: The calling file, recorded in the frame's ``FrameOrigin``.
    ///   - line: The calling line, recorded with it.
    /// - Complexity: Amortized O(1).
    @inlinable
    public func push(_ environment: HabitatEnvironment<App>, label: String? = nil, fileID: StaticString = #fileID, line: UInt = #line) {
        withActiveState { $0.push(FrameOrigin(.push, label: label, fileID: fileID, line: line)) { $0 = environment } }
    }

    /// Pushes a changed copy of the current environment.
    ///
    /// ```swift
    /// appEnvironment.push { $0.locale = Locale(identifier: "de_DE") }
    /// ```
    ///
    /// The change is atomic: it is applied to the top as it is when the push commits. If another
    /// writer changes the stack while `change` runs, `change` runs again on the newer top, so
    /// keep it free of side effects.
    ///
    /// - Parameters:
    ///   - label: A label for the frame, shown by ``frames`` and in the change it publishes.
    ///   - fileID: The calling file, recorded in the frame's ``FrameOrigin``.
    ///   - line: The calling line, recorded with it.
    ///   - change: Changes the copy that becomes the new top.
    /// - Throws: Whatever `change` throws; nothing is pushed then.
    @inlinable
    public func push<E: Error>(
        label: String? = nil,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        _ change: (inout HabitatEnvironment<App>) throws(E) -> Void
    ) throws(E) {
        let origin = FrameOrigin(.push, label: label, fileID: fileID, line: line)
        try withActiveState { (state) throws(E) in try state.push(origin, change) }
    }

    /// Removes the top environment and returns it.
    ///
    /// The base is never popped: on a stack (or scope) with only its base left, `pop()` returns
    /// `nil` and changes nothing.
    ///
    /// - Parameters:
    ///   - fileID: The calling file, recorded in the change it publishes.
    ///   - line: The calling line, recorded with it.
    /// - Returns: The removed environment, or `nil` when only the base is left.
    @inlinable @discardableResult
    public func pop(fileID: StaticString = #fileID, line: UInt = #line) -> HabitatEnvironment<App>? {
        withActiveState { $0.pop(FrameOrigin(.pop, fileID: fileID, line: line)) }
    }

    /// Replaces the top environment with a changed copy of it, atomically; on a stack with only
    /// its base, the base.
    ///
    /// ```swift
    /// appEnvironment.replaceCurrent { $0.timeZone = TimeZone(identifier: "Europe/Berlin")! }
    /// appEnvironment.replaceCurrent { $0 = signedOutEnvironment }   // a whole environment
    /// ```
    ///
    /// If another writer changes the stack while `change` runs, `change` runs again on the newer
    /// top, so keep it free of side effects.
    ///
    /// - Parameters:
    ///   - label: A label for the frame, shown by ``frames`` and in the change it publishes.
    ///   - fileID: The calling file, recorded in the frame's ``FrameOrigin``.
    ///   - line: The calling line, recorded with it.
    ///   - change: Changes the copy that replaces the top.
    /// - Throws: Whatever `change` throws; nothing changes then.
    @inlinable
    public func replaceCurrent<E: Error>(
        label: String? = nil,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        _ change: (inout HabitatEnvironment<App>) throws(E) -> Void
    ) throws(E) {
        let origin = FrameOrigin(.replace, label: label, fileID: fileID, line: line)
        try withActiveState { (state) throws(E) in
            try state.update(origin) { (environment) throws(E) in
                try change(&environment)
                return true
            }
        }
    }
}
