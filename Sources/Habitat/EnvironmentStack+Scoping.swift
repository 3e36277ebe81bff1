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
    /// let greeting = AppEnvironment.withEnvironment({ $0.locale = Locale(identifier: "fr_FR") }) {
    ///     makeGreeting()   // reads AppEnvironment.current.locale == fr_FR
    /// }
    /// ```
    ///
    /// The scope follows the task, not the thread: code that escapes it (a `DispatchQueue`
    /// closure, `Task.detached`) sees the stack outside. Capture the environment as a value
    /// (`let env = AppEnvironment.current`) and pass it along, or re-enter the scope there with
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
        var environment = current
        change(&environment)
        return try withScope(makeScope(environment, origin: FrameOrigin(.scope, fileID: fileID, line: line)), operation: operation)
    }

    /// Runs `operation` with `environment` as the base of a scope of its own, for the calling
    /// task and its child tasks only.
    ///
    /// Use it to start from a whole environment (a test world, one captured before escaping):
    ///
    /// ```swift
    /// let captured = AppEnvironment.current
    /// DispatchQueue.global().async {
    ///     AppEnvironment.withEnvironment(captured) { work() }
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
        try withScope(makeScope(copy environment, origin: FrameOrigin(.scope, fileID: fileID, line: line)), operation: operation)
    }

    /// Runs `operation` in the scope `link` begins, then ends the scope.
    @inlinable
    func withScope<R, E: Error>(_ link: consuming ScopeLink, operation: () throws(E) -> R) throws(E) -> R {
        var scope: ScopeLink? = consume link
        let outcome = Scopes.innermost.withValue(scope) { () -> Result<R, E> in
            do throws(E) {
                return .success(try operation())
            } catch {
                return .failure(error)
            }
        }
        endScope(&scope)
        return try outcome.get()
    }

    /// Runs the asynchronous `operation` with a changed environment, for the calling task and
    /// the child tasks it starts (`async let`, task groups, `Task {}`) only.
    ///
    /// See ``withEnvironment(_:fileID:line:operation:)-((HabitatEnvironment<App>)->Void,_,_,_)`` for what a scope
    /// is.
    ///
    /// ```swift
    /// @Test func showsTheUsersName() async throws {
    ///     try await AppEnvironment.withEnvironment({ $0.services = .mock }) {
    ///         AppEnvironment.login(user: .ada, token: AuthToken("t"))
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
        var environment = current
        await change(&environment)
        let origin = FrameOrigin(.scope, fileID: fileID, line: line)
        return try await withScope(makeScope(environment, origin: origin), isolation: isolation, operation: operation)
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
        return try await withScope(makeScope(copy environment, origin: origin), isolation: isolation, operation: operation)
    }

    /// Runs the asynchronous `operation` in the scope `link` begins, then ends the scope.
    @inlinable
    func withScope<R, E: Error>(
        _ link: consuming ScopeLink,
        isolation: isolated (any Actor)?,
        operation: () async throws(E) -> R
    ) async throws(E) -> R {
        var scope: ScopeLink? = consume link
        let outcome = await Scopes.innermost.withValue(
            scope,
            operation: { () async -> Result<R, E> in
                do throws(E) {
                    return .success(try await operation())
                } catch {
                    return .failure(error)
                }
            },
            isolation: isolation
        )
        endScope(&scope)
        return try outcome.get()
    }

    /// Builds the task-local link for a new scope of this stack, based on `environment`.
    @inlinable
    func makeScope(_ environment: consuming HabitatEnvironment<App>, origin: FrameOrigin) -> ScopeLink {
        let next = Scopes.innermostAddress(key: scopesKey).map {
            Unmanaged<ScopeLink>.fromOpaque($0).takeUnretainedValue()
        }
        if let pooled = scopePool.take() {
            unsafeDowncast(pooled.state.invariantUnwrapped, to: StackState<App>.self)
                .reuse(base: environment, origin: origin)
            pooled.relink(to: next)
            return pooled
        }
        let state = StackState.make(base: environment, origin: origin, liveScopes: liveScopes)
        return ScopeLink(stackID: id, state: state, next: next)
    }

    /// Ends a scope: when nothing outlives it (no task started in it still runs), its link and
    /// state go back to the pool for the next scope; otherwise the last task to finish frees
    /// them.
    @inlinable
    func endScope(_ scope: inout ScopeLink?) {
        guard isKnownUniquelyReferenced(&scope), let link = scope else { return }
        scope = nil
        // The state is moved out of the link to see whether anything else holds it.
        var state = link.state.take()
        guard isKnownUniquelyReferenced(&state), let state else { return }
        unsafeDowncast(state, to: StackState<App>.self).retire()
        link.state = state
        link.relink(to: nil)
        scopePool.put(link)
    }
}
