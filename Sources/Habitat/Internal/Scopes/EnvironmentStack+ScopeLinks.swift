// How a scope begins and ends: a link bound task-locally, its state taken from the stack's
// pool or made, and handed back to the pool when nothing outlives the scope.
extension EnvironmentStack {
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
