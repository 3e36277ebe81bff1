public import Habitat
public import Testing

/// A Swift Testing trait that runs each test in a scope of its own on a stack, with a changed
/// environment.
///
/// On a test, the test (each of its arguments, each repetition) runs inside
/// `stack.withEnvironment(change)`. On a suite, every test in it does, each in its own scope.
/// Tests running in parallel never see each other's environment, pushes or logins.
///
/// ```swift
/// @Suite(.environment(appEnvironment) { $0 = .test(services: .unimplemented, config: .default) })
/// struct ProfileTests {
///     @Test(.environment(appEnvironment) { $0.services.api.fetchProfile = { _ in .ada } })
///     func showsTheName() async throws { ... }
/// }
/// ```
///
/// Traits nest in the order Swift Testing applies them: the suite's first, then the test's.
public struct EnvironmentTrait<App: EnvironmentSchema>: TestTrait, SuiteTrait, TestScoping {
    let stack: EnvironmentStack<App>
    /// A whole environment to start from, built anew for every test; `nil` to start from the
    /// current one (the suite's, for a test's trait).
    let environment: (@Sendable () -> HabitatEnvironment<App>)?
    let change: @Sendable (inout HabitatEnvironment<App>) -> Void
    /// Whether work the test started may outlive it unreported.
    var allowsUnfinishedWork = false
    /// Runs after the test, once the work it started has finished.
    var teardown: (@Sendable () async throws -> Void)?
    /// How long the teardown waits for the test's work.
    var drainLimit = Duration.seconds(10)
    /// The store the test names for its saves and restores; a fresh in-memory one when `nil`.
    var namedSessions: SessionStore<App>?

    init(
        stack: EnvironmentStack<App>,
        environment: (@Sendable () -> HabitatEnvironment<App>)?,
        change: @escaping @Sendable (inout HabitatEnvironment<App>) -> Void
    ) {
        self.stack = stack
        self.environment = environment
        self.change = change
    }

    /// Applied to every test in a suite, each in its own scope.
    public var isRecursive: Bool { true }

    public func provideScope(
        for test: Test,
        testCase: Test.Case?,
        performing function: @Sendable () async throws -> Void
    ) async throws {
        LoadedCopies.check()
        let name = "\(test.name) (\(test.sourceLocation.fileID):\(test.sourceLocation.line))"
        // NB: a whole environment never reads the stack: in a test run, the stack outside every
        // test's scope is the live environment, which a test must not reach.
        // The test's own storage: the stack's saves and restores in its scope go there.
        let storage = TestStorage<App>(named: namedSessions)
        let (work, outcome) = await TestStorageBinding.$current.withValue(storage) {
            await OpenTestScopes.shared.with(name, at: test.sourceLocation) {
                await stack.withTestScope(environment, change) { try await function() }
            }
        }
        storage.end()
        if work.isRunning, await !work.drained(within: .milliseconds(50)), !allowsUnfinishedWork, !test.isSuite {
            UnfinishedWork.report(test)
        }
        if let teardown {
            if await !work.drained(within: drainLimit), !allowsUnfinishedWork, !test.isSuite {
                UnfinishedWork.report(test, afterWaiting: drainLimit)
            }
            try await teardown()
        }
        try outcome.get()
    }

    /// This trait, with every save and restore of the test's going to `sessions`, used as
    /// named: for a test of what lands in a file, say.
    ///
    /// By default, inside the test's scope, the stack's `save(to:)`, `restore(from:)` (and so
    /// `restoreAtLaunch(from:)` and `logout(savingTo:)`) and autosave aimed at a durable store
    /// (a file, user defaults: the app's real one) go to a fresh in-memory store of the test's
    /// own, and a store in memory is used as named; `testLedger` lists them (see ``TestLedger``).
    /// - Parameter sessions: The store the test's saves and restores go to.
    /// - Returns: The changed trait.
    public func sessions(_ sessions: SessionStore<App>) -> Self {
        var trait = self
        trait.namedSessions = sessions
        return trait
    }

    /// This trait, letting work the test starts in its scope (a `Task {}`) outlive the test
    /// unreported: by default such work is an issue of the test, since it may write into the
    /// next test's store or call its services.
    ///
    /// ```swift
    /// @Test(.environment(appEnvironment, services: .stub).allowingUnfinishedWork())
    /// func startsABackgroundSync() async { ... }
    /// ```
    /// - Returns: The changed trait.
    public func allowingUnfinishedWork() -> Self {
        var trait = self
        trait.allowsUnfinishedWork = true
        return trait
    }

    /// This trait, running `body` after each test (each argument, each repetition), once the
    /// work the test started in its scope has finished (or after `limit`): to close a database
    /// or flush a store the test's environment used. It runs whether the test passed or not; what it
    /// throws fails the test. Given twice, both run, in order.
    ///
    /// ```swift
    /// @Test(.environment(appEnvironment, services: .stub).teardown { await database.close() })
    /// func savesTheDraft() async throws { ... }
    /// ```
    /// - Parameters:
    ///   - limit: How long to wait for the test's work; 10 seconds by default. Work still
    ///     running then is reported (unless allowed), and the teardown runs anyway.
    ///   - body: The teardown.
    /// - Returns: The changed trait.
    public func teardown(waitingAtMost limit: Duration = .seconds(10), _ body: @escaping @Sendable () async throws -> Void) -> Self {
        var trait = self
        trait.drainLimit = limit
        trait.teardown = { [previous = teardown] in
            try await previous?()
            try await body()
        }
        return trait
    }
}

/// Work a test started in its scope that still runs at its end.
enum UnfinishedWork {
    /// Reports it as an issue of `test`, once per test.
    static func report(_ test: Test, afterWaiting waited: Duration? = nil) {
        let key = "unfinished \(test.id)"
        guard Reported.shared.insert(key) else { return }
        let message = "test \(test.name) left work running at its end\(waited.map { " (still after \($0), before its teardown)" } ?? ""). "
            + "A task started in its scope (`Task { }` copies the scope) may write into the next test's store or call "
            + "its services. Await or cancel it before the test returns, or allow it with `.allowingUnfinishedWork()` on the trait."
        ContextReport(message).record(at: test.sourceLocation)
    }
}

extension ScopeWork {
    /// Waits until the work has finished, for at most `limit`; returns whether it had.
    func drained(within limit: Duration) async -> Bool {
        let clock = ContinuousClock()
        let deadline = clock.now + limit
        while isRunning {
            guard clock.now < deadline else { return false }
            try? await Task.sleep(for: .milliseconds(1))
        }
        return true
    }
}

extension Trait {
    /// Runs the test (or every test of the suite) in a scope of its own on `stack`, with the
    /// environment changed by `change`.
    ///
    /// - Parameters:
    ///   - stack: The app's stack, usually its global `appEnvironment`.
    ///   - change: Changes the scope's copy of the current environment.
    /// - Returns: The trait.
    public static func environment<App>(
        _ stack: EnvironmentStack<App>,
        _ change: @escaping @Sendable (inout HabitatEnvironment<App>) -> Void
    ) -> Self where Self == EnvironmentTrait<App> {
        EnvironmentTrait(stack: stack, environment: nil, change: change)
    }

    /// Runs the test (or every test of the suite) in a scope of its own on `stack`, starting
    /// from a fresh `environment`.
    ///
    /// `environment` is evaluated anew for every test (every argument, every repetition), so
    /// services that are classes, such as mocks that count their calls, are never shared
    /// between tests running in parallel.
    ///
    /// - Parameters:
    ///   - stack: The app's stack.
    ///   - environment: The scope's base environment, built once per test.
    /// - Returns: The trait.
    public static func environment<App>(
        _ stack: EnvironmentStack<App>,
        _ environment: @autoclosure @escaping @Sendable () -> HabitatEnvironment<App>
    ) -> Self where Self == EnvironmentTrait<App> {
        EnvironmentTrait(stack: stack, environment: environment, change: { _ in })
    }

    /// Runs the test (or every test of the suite) in a scope of its own on `stack`, in the test
    /// environment of `services`: `HabitatEnvironment.test(services:)` (a fixed clock, `en_US_POSIX`,
    /// UTC, counting UUIDs), built anew for every test, then changed by `change`, if given.
    ///
    /// ```swift
    /// @Test(.environment(appEnvironment, services: AppServices(api: .stub)))
    /// func greetsTheMember() async throws { ... }
    ///
    /// @Test(.environment(appEnvironment, services: .stub) { $0.locale = Locale(identifier: "de_DE") })
    /// func greetsInGerman() async throws { ... }
    /// ```
    /// - Parameters:
    ///   - stack: The app's stack.
    ///   - services: The test's services, built once per test.
    ///   - change: Changes the test's environment, once per test, before the test runs.
    /// - Returns: The trait.
    public static func environment<App>(
        _ stack: EnvironmentStack<App>,
        services: @autoclosure @escaping @Sendable () -> App.Services,
        _ change: @escaping @Sendable (inout HabitatEnvironment<App>) -> Void = { _ in }
    ) -> Self where Self == EnvironmentTrait<App>, App.Config: DefaultConfig {
        EnvironmentTrait(stack: stack, environment: { .test(services: services()) }, change: change)
    }

    /// Runs the test (or every test of the suite) in a scope of its own on `stack`, starting
    /// from a fresh `environment` changed by `change`: a whole environment plus the one thing this
    /// test needs different.
    ///
    /// ```swift
    /// @Test(.environment(appEnvironment, .test(services: .stub())) { $0.locale = Locale(identifier: "de_DE") })
    /// func greetsInGerman() async throws { ... }
    /// ```
    /// - Parameters:
    ///   - stack: The app's stack.
    ///   - environment: The scope's base environment, built once per test.
    ///   - change: Changes it, once per test, before the test runs.
    /// - Returns: The trait.
    public static func environment<App>(
        _ stack: EnvironmentStack<App>,
        _ environment: @autoclosure @escaping @Sendable () -> HabitatEnvironment<App>,
        _ change: @escaping @Sendable (inout HabitatEnvironment<App>) -> Void
    ) -> Self where Self == EnvironmentTrait<App> {
        EnvironmentTrait(stack: stack, environment: environment, change: change)
    }
}
