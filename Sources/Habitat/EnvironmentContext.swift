import Foundation

/// Where the process runs: the app itself, a test run, or an Xcode preview.
///
/// A stack declared with ``EnvironmentStack/init(live:preview:test:fileID:line:)`` picks its base
/// by context: the live environment in the app, the preview environment in a preview, and in a test
/// none at all, so that a test that forgets to install a test environment is told so instead of
/// quietly talking to live services.
///
/// Habitat detects the context once per process: `HABITAT_CONTEXT=live|test|preview` in the
/// environment decides; otherwise an Xcode preview (`XCODE_RUNNING_FOR_PREVIEWS=1`) is
/// ``preview``, a test runner (an `.xctest` bundle, `swiftpm-testing-helper`, or the variables
/// Xcode sets for tests) is ``test``, and anything else is ``live``.
///
/// ```swift
/// if EnvironmentContext.current == .preview { print("rendering a preview") }
/// ```
public enum EnvironmentContext: String, Sendable, CaseIterable {
    /// The app, a command-line tool or a server: live services.
    case live
    /// A test run (XCTest or Swift Testing): each test installs its own environment.
    case test
    /// An Xcode preview: the preview environment, if the stack declares one.
    case preview

    /// The context of this process, detected once.
    public static let current: EnvironmentContext = detect(
        environment: ProcessInfo.processInfo.environment,
        arguments: ProcessInfo.processInfo.arguments
    )

    /// The context that `environment` and `arguments` describe (the rules of ``current``).
    package static func detect(environment: [String: String], arguments: [String]) -> EnvironmentContext {
        if let named = environment["HABITAT_CONTEXT"], let context = EnvironmentContext(rawValue: named.lowercased()) {
            return context
        }
        if environment["XCODE_RUNNING_FOR_PREVIEWS"] == "1" { return .preview }
        if environment["XCTestConfigurationFilePath"] != nil || environment["XCTestBundlePath"] != nil
            || environment["XCTestSessionIdentifier"] != nil {
            return .test
        }
        let executable = arguments.first ?? ""
        if executable.hasSuffix(".xctest") || executable.contains(".xctest/") || executable.hasSuffix("/xctest")
            || executable.hasSuffix("swiftpm-testing-helper") {
            return .test
        }
        return .live
    }
}

/// How the `Habitat` module reaches the test frameworks without importing them: `HabitatTesting`
/// declares the one conforming type, and a stack that must report a test's read of the live
/// environment finds it by name. Package-visible: not for apps.
package protocol HabitatTestReporting: SendableMetatype {
    /// A read in a test run reached the base of `stack` ("the stack made at FILE:LINE") while
    /// `openScopes` scopes of that stack were open in the process; `testEnvironmentInstalled` says
    /// whether the base is the stack's test environment (otherwise it is the live one).
    static func liveBaseReached(stack: String, openScopes: Int, testEnvironmentInstalled: Bool)
    /// Habitat's code is loaded more than once in this process (see `LoadedCopies`).
    static func loadedTwice(_ report: String)
}

/// `HabitatTesting.TestContextReporter`, if the process links `HabitatTesting`.
let testReporter: (any HabitatTestReporting.Type)? =
    _typeByName("14HabitatTesting19TestContextReporterO") as? any HabitatTestReporting.Type
