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

    /// Applied to every test in a suite, each in its own scope.
    public var isRecursive: Bool { true }

    public func provideScope(
        for test: Test,
        testCase: Test.Case?,
        performing function: @Sendable () async throws -> Void
    ) async throws {
        let name = "\(test.name) (\(test.sourceLocation.fileID):\(test.sourceLocation.line))"
        try await OpenTestScopes.shared.with(name, at: test.sourceLocation) {
            // NB: a whole environment never reads the stack: in a test run, the stack outside
            // every test's scope is the live world, which a test must not reach.
            if let environment {
                var world = environment()
                change(&world)
                try await stack.withEnvironment(world) { try await function() }
            } else {
                try await stack.withEnvironment(change) { try await function() }
            }
        }
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
    /// world of `services`: `HabitatEnvironment.test(services:)` (a fixed clock, `en_US_POSIX`,
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
    ///   - change: Changes the test's world, once per test, before the test runs.
    /// - Returns: The trait.
    public static func environment<App>(
        _ stack: EnvironmentStack<App>,
        services: @autoclosure @escaping @Sendable () -> App.Services,
        _ change: @escaping @Sendable (inout HabitatEnvironment<App>) -> Void = { _ in }
    ) -> Self where Self == EnvironmentTrait<App>, App.Config: DefaultConfig {
        EnvironmentTrait(stack: stack, environment: { .test(services: services()) }, change: change)
    }

    /// Runs the test (or every test of the suite) in a scope of its own on `stack`, starting
    /// from a fresh `environment` changed by `change`: a whole world plus the one thing this
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
