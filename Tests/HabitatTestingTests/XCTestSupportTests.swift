import Foundation
import Habitat
import HabitatPersistence
import HabitatTesting
import XCTest

/// The documented XCTest pattern: override `invokeTest()` so every test method, sync or
/// async, runs in a scope of its own.
final class XCTestIsolationTests: XCTestCase {
    override func invokeTest() {
        AppEnvironment.withEnvironment({ $0 = .test(services: Services(label: "xctest"), config: Config()) }) {
            super.invokeTest()
        }
    }

    func testSyncTestsSeeTheTestEnvironment() {
        XCTAssertEqual(AppEnvironment.current.services.label, "xctest")
        XCTAssertEqual(AppEnvironment.current.now(), TestFixtures.date)
        AppEnvironment.login(user: .ada, token: AuthToken("t"))
        XCTAssertEqual(AppEnvironment.current.currentUser, .ada)
    }

    func testAsyncTestsSeeTheTestEnvironment() async throws {
        XCTAssertEqual(AppEnvironment.current.services.label, "xctest")
        try await Task.sleep(nanoseconds: 1_000)
        XCTAssertNil(AppEnvironment.current.currentUser, "the login of another test did not leak")
        var api = AppEnvironment.current.services.api
        api.fetchUser = { id in User(id: id, name: "swapped") }
        AppEnvironment.replaceCurrent { $0.services.api = api }
        let user = try await AppEnvironment.current.services.api.fetchUser(3)
        XCTAssertEqual(user, User(id: 3, name: "swapped"))
    }

    func testTheGlobalStackIsUntouchedAfterwards() {
        // Checked from a thread of its own, which sees the global stack, not this test's scope.
        let done = DispatchSemaphore(value: 0)
        let label = LockedBox<String?>(nil)
        Thread.detachNewThread {
            label.withLock { $0 = AppEnvironment.current.services.label }
            done.signal()
        }
        done.wait()
        XCTAssertEqual(label.withLock { $0 }, "live")
        XCTAssertEqual(AppEnvironment.current.services.label, "xctest")
    }
}

/// Proves an unimplemented endpoint records an XCTest failure, by catching the failure.
final class XCTestFailureReportingTests: XCTestCase {
    private var recorded: [String] = []
    private var capturing = false

    #if os(Linux)
    override func recordFailure(withDescription description: String, inFile filePath: String, atLine lineNumber: Int, expected: Bool) {
        if capturing { recorded.append(description) } else {
            super.recordFailure(withDescription: description, inFile: filePath, atLine: lineNumber, expected: expected)
        }
    }
    #else
    override func record(_ issue: XCTIssue) {
        if capturing { recorded.append(issue.compactDescription) } else { super.record(issue) }
    }
    #endif

    func testAnUnimplementedEndpointFailsTheXCTest() async {
        capturing = true
        let count = APIClient.unimplemented.count()
        do {
            _ = try await APIClient.unimplemented.fetchUser(1)
            XCTFail("expected UnimplementedError")
        } catch {
            XCTAssertEqual(error as? UnimplementedError, UnimplementedError(endpoint: "APIClient.fetchUser"))
        }
        capturing = false
        XCTAssertEqual(count, -1)
        XCTAssertEqual(recorded.count, 2)
        XCTAssertTrue(recorded[0].contains("APIClient.count is unimplemented"), recorded[0])
        XCTAssertTrue(recorded[1].contains("APIClient.fetchUser is unimplemented"), recorded[1])
    }
}

/// The base class: every test runs in its own scope, sync and async alike.
final class EnvironmentTestCaseTests: EnvironmentTestCase<TestingApp> {
    override func setUpEnvironment() -> (EnvironmentStack<TestingApp>, HabitatEnvironment<TestingApp>)? {
        (AppEnvironment, .test(services: Services(label: "base class"), config: Config(greeting: "Hey")))
    }

    func testSyncTestRunsInTheScope() {
        XCTAssertEqual(AppEnvironment.current.services.label, "base class")
        XCTAssertEqual(AppEnvironment.current.config.greeting, "Hey")
        AppEnvironment.login(user: .grace, token: AuthToken("g"))
        XCTAssertEqual(AppEnvironment.depth, 1)
    }

    func testAsyncTestRunsInTheScope() async {
        await Task.yield()
        XCTAssertEqual(AppEnvironment.current.services.label, "base class")
        XCTAssertNil(AppEnvironment.current.currentUser, "another test's login stayed in its scope")
        XCTAssertEqual(AppEnvironment.current.now(), TestFixtures.date)
    }
}

/// A subclass that forgets `setUpEnvironment()` is told so by a test failure, and still runs.
final class EnvironmentTestCaseWithoutSetUpTests: EnvironmentTestCase<TestingApp> {
    private var recorded: [String] = []

    // Only the expected failure is caught; any other failure still fails the test.
    #if os(Linux)
    override func recordFailure(withDescription description: String, inFile filePath: String, atLine lineNumber: Int, expected: Bool) {
        if description.contains("must override setUpEnvironment()") {
            recorded.append(description)
        } else {
            super.recordFailure(withDescription: description, inFile: filePath, atLine: lineNumber, expected: expected)
        }
    }
    #else
    override func record(_ issue: XCTIssue) {
        if issue.compactDescription.contains("must override setUpEnvironment()") {
            recorded.append(issue.compactDescription)
        } else {
            super.record(issue)
        }
    }
    #endif

    override func tearDown() {
        let failures = recorded
        recorded = []
        XCTAssertEqual(failures.count, 1)
        XCTAssertTrue(failures.first?.contains("must override setUpEnvironment()") == true, "\(failures)")
        super.tearDown()
    }

    func testRunsUnscopedAndReportsTheMissingOverride() {
        XCTAssertEqual(AppEnvironment.current.services.label, "live")
    }
}

/// What this toolchain does with one framework's assertion inside the other's test: it drops it.
/// A canary: when a toolchain reports them (Swift Testing's XCTest interoperability), these tests
/// fail, and the Testing article's paragraph on mixing the two must change. Habitat's own
/// reports never depend on it: they go to whichever framework runs the test
/// (`XCTestFailureReportingTests`, `UnimplementedTests`).
@Suite struct FrameworkInteropCanaryTests {
    @Test func anXCTFailInsideASwiftTestingTestIsDroppedHere() {
        XCTFail("dropped by this toolchain: if this fails a test, the toolchain reports XCTest assertions in Swift Testing")
    }
}

final class SwiftTestingInsideXCTestCanaryTests: XCTestCase {
    func testAnExpectationInsideAnXCTestIsDroppedHere() {
        #expect(Bool(false), "dropped by this toolchain: if this fails a test, the toolchain reports Swift Testing inside XCTest")
    }
}
