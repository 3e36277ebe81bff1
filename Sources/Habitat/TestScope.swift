// A test's scope, for HabitatTesting's trait: the scope `withEnvironment` makes, and, when it
// ends, whether work started in it (a `Task {}`, which copies the scope's binding) still runs.

extension EnvironmentStack {
    /// Runs `operation` in a scope of its own, based on `environment()` (or, when `nil`, on a
    /// copy of the calling task's current environment) changed by `change`, then ends the scope.
    /// - Returns: The work started in the scope, to ask whether it still runs, and what
    ///   `operation` returned or threw.
    package func withTestScope(
        _ environment: (() -> HabitatEnvironment<App>)?,
        _ change: (inout HabitatEnvironment<App>) -> Void,
        isolation: isolated (any Actor)? = #isolation,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        operation: () async throws -> Void
    ) async -> (work: ScopeWork, outcome: Result<Void, any Error>) {
        var environment = environment?() ?? currentCopy()
        change(&environment)
        var scope: StackState<App>? = makeScope(environment, origin: FrameOrigin(.scope, fileID: fileID, line: line))
        let outcome = await Scopes.innermost.withValue(
            scope,
            operation: { () async -> Result<Void, any Error> in
                do { return .success(try await operation()) } catch { return .failure(error) }
            },
            isolation: isolation
        )
        // NB: while a task started in the scope runs, its copy of the binding holds the state
        // (and `endScope` leaves it to that task); a weak reference sees when the last one ends.
        // A state nothing else holds goes back to the pool: nothing to watch.
        let work = ScopeWork(watching: isKnownUniquelyReferenced(&scope) ? nil : scope)
        endScope(&scope)
        return (work, outcome)
    }
}

/// The work started in a test's scope that outlived it.
package struct ScopeWork: Sendable {
    private let alive: @Sendable () -> Bool

    init<App>(watching state: StackState<App>?) {
        guard let state else {
            alive = { false }
            return
        }
        alive = { [weak state] in state != nil }
    }

    /// Whether work started in the scope still runs.
    package var isRunning: Bool { alive() }
}
