// How a scope begins and ends: its state bound task-locally, taken from the stack's pool or
// made, and handed back to the pool when nothing outlives the scope.
extension EnvironmentStack {
    /// Runs `operation` in the scope `state` begins, then ends the scope.
    @inlinable
    func withScope<R, E: Error>(_ state: consuming StackState<App>, operation: () throws(E) -> R) throws(E) -> R {
        var scope: StackState<App>? = consume state
        let outcome = Scopes.innermost.withValue(scope) { () -> Result<R, E> in
            do throws(E) { return .success(try operation()) } catch { return .failure(error) }
        }
        endScope(&scope)
        return try outcome.get()
    }

    /// Runs the asynchronous `operation` in the scope `state` begins, then ends the scope.
    @inlinable
    func withScope<R, E: Error>(
        _ state: consuming StackState<App>,
        isolation: isolated (any Actor)?,
        operation: () async throws(E) -> R
    ) async throws(E) -> R {
        var scope: StackState<App>? = consume state
        let outcome = await Scopes.innermost.withValue(
            scope,
            operation: { () async -> Result<R, E> in
                do throws(E) { return .success(try await operation()) } catch { return .failure(error) }
            },
            isolation: isolation
        )
        endScope(&scope)
        return try outcome.get()
    }

    /// The state for a new scope of this stack, based on `environment`, inside the calling
    /// task's innermost scope.
    ///
    /// NB: building a scope's state and tearing it down again were most of what a scope cost;
    /// a scope that leaves nothing behind hands its state back to `scopePool` instead.
    @inlinable
    func makeScope(_ environment: consuming HabitatEnvironment<App>, origin: consuming FrameOrigin) -> StackState<App> {
        guard let pooled = scopePool.withLock({ $0.popLast() }) else {
            let state = StackState(stackID: id, top: .make(environment, origin: origin), liveScopes: liveScopes)
            state.relink(to: Scopes.innermostLink)
            return state
        }
        pooled.reuse(base: environment, origin: origin)
        pooled.relink(to: Scopes.innermostLink)
        return pooled
    }

    /// Ends a scope: when nothing outlives it (no task started in it still runs), its state
    /// goes back to the pool for the next scope; otherwise the last task to finish frees it.
    @inlinable
    func endScope(_ scope: inout StackState<App>?) {
        guard isKnownUniquelyReferenced(&scope), let state = scope.take() else { return }
        state.retire()
        state.relink(to: nil)
        // NB: a server starts a batch of requests before any ends; with room for 8 states, 21%
        // (16 connections) to 79% (512) of its scopes found the pool empty and built a state.
        scopePool.withLock { pool in
            if pool.count < 1_024 { pool.append(state) }
        }
    }
}
