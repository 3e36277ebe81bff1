import Foundation
public import Habitat
import Testing
import XCTest

/// How a stack made with `EnvironmentStack(live:)` reports, in a test run, a read that found no
/// test world: `Habitat` finds this type by name, so it needs no import of either framework.
///
/// Not for apps: linking `HabitatTesting` is what turns the stack's warning into a test failure.
public enum TestContextReporter: _HabitatTestReporting {
    /// The running test: Swift Testing's current test, or the XCTest test running now.
    public static func currentTestName() -> String? {
        if let test = Test.current { return test.name }
        return XCTestWatcher.shared.running
    }

    /// The tests running inside an environment scope now (the trait's and `EnvironmentTestCase`'s).
    public static func openTestScopes() -> [String] {
        OpenTestScopes.shared.names
    }

    /// Records `message` as a failure of the running test, at the test's own line under Swift
    /// Testing; otherwise as `reportTestFailure` does.
    public static func reportFailure(_ message: String, fileID: String, line: UInt) {
        if CapturedStackReports.shared.capture(message) {
            return
        } else if let test = Test.current, CapturedTestFailures.current == nil {
            Issue.record(Comment(rawValue: message), sourceLocation: test.sourceLocation)
        } else {
            reportTestFailure(message, fileID: fileID, line: line)
        }
    }
}

/// The tests that run inside an environment scope now, by name and where the scope began.
final class OpenTestScopes: @unchecked Sendable {
    // Safe: `open` is read and written only with `lock` held.
    static let shared = OpenTestScopes()
    private let lock = NSLock()
    private var open: [UUID: String] = [:]

    var names: [String] { lock.withLock { open.values.sorted() } }

    /// Runs `body` with `name` among the open test scopes.
    func with<R>(_ name: String, _ body: () async throws -> R) async rethrows -> R {
        let key = UUID()
        lock.withLock { open[key] = name }
        defer { _ = lock.withLock { open.removeValue(forKey: key) } }
        return try await body()
    }

    /// Runs `body` with `name` among the open test scopes.
    func with<R>(_ name: String, _ body: () throws -> R) rethrows -> R {
        let key = UUID()
        lock.withLock { open[key] = name }
        defer { _ = lock.withLock { open.removeValue(forKey: key) } }
        return try body()
    }
}

/// The XCTest test running now, as XCTest tells its observers.
final class XCTestWatcher: NSObject, XCTestObservation, @unchecked Sendable {
    // Safe: `current` is read and written only with `lock` held.
    static let shared: XCTestWatcher = {
        let watcher = XCTestWatcher()
        XCTestObservationCenter.shared.addTestObserver(watcher)
        return watcher
    }()
    private let lock = NSLock()
    private var current: String?

    var running: String? { lock.withLock { current } }

    func testCaseWillStart(_ testCase: XCTestCase) { lock.withLock { current = testCase.name } }
    func testCaseDidFinish(_ testCase: XCTestCase) { lock.withLock { current = nil } }
}

/// Reports about one stack that HabitatTesting's own tests collect instead of failing: a read
/// from a detached task has no task-local capture, so the capture is by the stack's
/// declaration, process-wide.
package final class CapturedStackReports: @unchecked Sendable {
    // Safe: `captures` is read and written only with `lock` held.
    package static let shared = CapturedStackReports()
    private let lock = NSLock()
    private var captures: [String: [String]] = [:]

    /// Collects reports about the stack made at `fileID`:`line` while `body` runs.
    package func collect(stackAt fileID: String, line: UInt, _ body: () async throws -> Void) async rethrows -> [String] {
        let key = "\(fileID):\(line)"
        lock.withLock { captures[key] = [] }
        defer { _ = lock.withLock { captures.removeValue(forKey: key) } }
        try await body()
        return lock.withLock { captures[key] ?? [] }
    }

    /// Keeps `message` if it is about a stack being collected; returns whether it did.
    func capture(_ message: String) -> Bool {
        lock.withLock {
            guard let key = captures.keys.first(where: { message.contains("the stack made at \($0)") }) else { return false }
            captures[key, default: []].append(message)
            return true
        }
    }
}
