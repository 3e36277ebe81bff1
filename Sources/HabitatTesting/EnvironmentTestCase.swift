public import Habitat
public import XCTest

/// An `XCTestCase` whose every test, sync or async, runs in a `withEnvironment` scope of its
/// own, so XCTest tests get the same isolation the Swift Testing trait gives.
///
/// Subclass it and say which stack and which environment, once:
///
/// ```swift
/// final class ProfileModelXCTests: EnvironmentTestCase<AppSchema> {
///     override func setUpEnvironment() -> (EnvironmentStack<AppSchema>, HabitatEnvironment<AppSchema>)? {
///         (appEnvironment, .test(services: .unimplemented, config: .default))
///     }
///
///     func testSigningIn() async throws {
///         appEnvironment.replaceCurrent { $0.services.api.signIn = { _, _ in (.ada, AuthToken("t")) } }
///         ...
///     }
/// }
/// ```
///
/// Without a base class, override `invokeTest()` in your own test case to the same effect:
///
/// ```swift
/// override func invokeTest() {
///     appEnvironment.withEnvironment(.test(services: .unimplemented, config: .default)) {
///         super.invokeTest()
///     }
/// }
/// ```
open class EnvironmentTestCase<App: EnvironmentSchema>: XCTestCase {
    /// The stack the tests use and the environment each test starts from. Called once per test.
    ///
    /// Override it. Returning `nil` (what the default does) means "no test environment": the test
    /// fails, saying this method must be overridden, and runs outside any scope.
    /// - Returns: The app's stack and the environment of the test's scope.
    open func setUpEnvironment() -> (EnvironmentStack<App>, HabitatEnvironment<App>)? {
        nil
    }

    /// Runs the test inside a scope of its own on the stack from ``setUpEnvironment()``.
    override open func invokeTest() {
        LoadedCopies.check()
        guard let (stack, environment) = setUpEnvironment() else {
            reportTestFailure("\(Self.self) must override setUpEnvironment() to run its tests in a scope")
            super.invokeTest()
            return
        }
        _ = XCTestWatcher.shared
        OpenTestScopes.shared.with(name) {
            stack.withEnvironment(environment) {
                super.invokeTest()
            }
        }
    }
}
