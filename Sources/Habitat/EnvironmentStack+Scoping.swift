extension EnvironmentStack {
    /// Runs `operation` with a changed environment, for the calling task and its child tasks only.
    ///
    /// Inside `operation`, ``current`` is a copy of the current environment changed by `change`.
    /// It is the base of a stack of the scope's own: ``push(_:label:fileID:line:)``,
    /// ``pop(fileID:line:)``, ``login(user:token:fileID:line:)``, ``logout(fileID:line:)`` and the updates act on it, never on the
    /// stack outside or on another task's scope. When `operation` returns or throws, all of it is
    /// gone and the outside is exactly as it was. Scopes nest.
    ///
    /// ```swift
    /// let greeting = appEnvironment.withEnvironment({ $0.locale = Locale(identifier: "fr_FR") }) {
    ///     makeGreeting()   // reads appEnvironment.current.locale == fr_FR
    /// }
    /// ```
    ///
    /// The scope follows the task, not the thread: code that escapes it (a `DispatchQueue`
    /// closure, `Task.detached`) sees the stack outside. Capture the environment as a value
    /// (`let env = appEnvironment.current`) and pass it along, or re-enter the scope there with
    /// ``withEnvironment(_:fileID:line:operation:)-(HabitatEnvironment<App>,_,_,_)``.
    ///
    /// - Parameters:
    ///   - change: Changes the copy that the scope starts from.
    ///   - fileID: The calling file, recorded as the scope base's ``FrameOrigin``.
    ///   - line: The calling line, recorded with it.
    ///   - operation: The work to run in the scope.
    /// - Returns: What `operation` returns.
    /// - Throws: Whatever `operation` throws, after the scope has ended.
    @inlinable
    public func withEnvironment<R, E: Error>(
        _ change: (inout HabitatEnvironment<App>) -> Void,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        operation: () throws(E) -> R
    ) throws(E) -> R {
        var environment = currentCopy()
        change(&environment)
        return try withScope(makeScope(consume environment, origin: FrameOrigin(.scope, fileID: fileID, line: line)), operation: operation)
    }

    /// Runs `operation` with `environment` as the base of a scope of its own, for the calling
    /// task and its child tasks only.
    ///
    /// Use it to start from a whole environment (a test environment, one captured before escaping):
    ///
    /// ```swift
    /// let captured = appEnvironment.current
    /// DispatchQueue.global().async {
    ///     appEnvironment.withEnvironment(captured) { work() }
    /// }
    /// ```
    /// - Parameters:
    ///   - environment: The scope's base environment.
    ///   - fileID: The calling file, recorded as the scope base's ``FrameOrigin``.
    ///   - line: The calling line, recorded with it.
    ///   - operation: The work to run in the scope.
    /// - Returns: What `operation` returns.
    /// - Throws: Whatever `operation` throws, after the scope has ended.
    @inlinable
    public func withEnvironment<R, E: Error>(
        _ environment: HabitatEnvironment<App>,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        operation: () throws(E) -> R
    ) throws(E) -> R {
        try withScope(makeScope(environment.fieldwiseCopy, origin: FrameOrigin(.scope, fileID: fileID, line: line)), operation: operation)
    }

    /// Runs the asynchronous `operation` with a changed environment, for the calling task and
    /// the child tasks it starts (`async let`, task groups, `Task {}`) only.
    ///
    /// See ``withEnvironment(_:fileID:line:operation:)-((HabitatEnvironment<App>)->Void,_,_,_)`` for what a scope
    /// is.
    ///
    /// ```swift
    /// @Test func showsTheUsersName() async throws {
    ///     try await appEnvironment.withEnvironment({ $0.services = .mock }) {
    ///         appEnvironment.login(user: .ada, token: AuthToken("t"))
    ///         #expect(try await ProfileModel().load().title == "Ada")
    ///     }
    /// }
    /// ```
    /// - Parameters:
    ///   - change: Changes the copy that the scope starts from; it may await.
    ///   - isolation: The actor to run `change` and `operation` on; the caller's, by default.
    ///   - fileID: The calling file, recorded as the scope base's ``FrameOrigin``.
    ///   - line: The calling line, recorded with it.
    ///   - operation: The work to run in the scope.
    /// - Returns: What `operation` returns.
    /// - Throws: Whatever `operation` throws, after the scope has ended.
    @inlinable
    public func withEnvironment<R, E: Error>(
        _ change: (inout HabitatEnvironment<App>) async -> Void,
        isolation: isolated (any Actor)? = #isolation,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        operation: () async throws(E) -> R
    ) async throws(E) -> R {
        var environment = currentCopy()
        await change(&environment)
        let origin = FrameOrigin(.scope, fileID: fileID, line: line)
        return try await withScope(makeScope(consume environment, origin: origin), isolation: isolation, operation: operation)
    }

    /// Runs the asynchronous `operation` with `environment` as the base of a scope of its own,
    /// for the calling task and the child tasks it starts only.
    ///
    /// - Parameters:
    ///   - environment: The scope's base environment.
    ///   - isolation: The actor to run `operation` on; the caller's, by default.
    ///   - fileID: The calling file, recorded as the scope base's ``FrameOrigin``.
    ///   - line: The calling line, recorded with it.
    ///   - operation: The work to run in the scope.
    /// - Returns: What `operation` returns.
    /// - Throws: Whatever `operation` throws, after the scope has ended.
    @inlinable
    public func withEnvironment<R, E: Error>(
        _ environment: HabitatEnvironment<App>,
        isolation: isolated (any Actor)? = #isolation,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        operation: () async throws(E) -> R
    ) async throws(E) -> R {
        let origin = FrameOrigin(.scope, fileID: fileID, line: line)
        return try await withScope(makeScope(environment.fieldwiseCopy, origin: origin), isolation: isolation, operation: operation)
    }
}
