import Foundation
import Habitat
import Testing
import XCTest

/// How a stack made with `EnvironmentStack(live:)` reports, in a test run, a read that found no
/// test environment: `Habitat` finds this type by name, so it needs no import of either framework.
///
/// Not for apps: linking `HabitatTesting` is what turns the stack's warning into a test failure.
package enum TestContextReporter: HabitatTestReporting {
    /// Fails the test that read the live environment of `stack`, once per test, at the test's own
    /// line; a read from work that escaped a test's scope is reported as "escaped scope", once
    /// per set of open test scopes, at the open test's declaration when only one is open.
    package static func liveBaseReached(stack: String, openScopes: Int, testEnvironmentInstalled: Bool) {
        let test = Test.current?.name ?? XCTestWatcher.shared.running
        let (scopes, soleScope) = OpenTestScopes.shared.snapshot
        let escaped = test == nil && openScopes > 0
        let message = escaped
            ? "escaped scope: \(stack) was read outside every scope, from work that left its test's task "
                + "(Task.detached, a DispatchQueue closure)\(scopes.isEmpty ? "" : " (open test scopes: \(scopes.joined(separator: "; ")))"). "
                + "Capture `stack.current` before leaving the task, or re-enter with `stack.withEnvironment(captured) { ... }`."
            : "\(test.map { "test \($0)" } ?? "a read outside every test's scope") reached "
                + (testEnvironmentInstalled
                    ? "\(stack) with no test environment installed: it got the stack's test environment (`test:`), never the live one. "
                    : "the live environment of \(stack): no test environment is installed, and the stack names no test environment "
                        + "(`EnvironmentStack(live:test:)`), so the live environment was built. ")
                + "To fix it, install a test environment with `.environment(stack, services: ...)` "
                + "on the test or its suite, or `EnvironmentTestCase` in XCTest; a test that means to use live values starts "
                + "its scope from `stack.liveEnvironment`, and HABITAT_CONTEXT=live turns this check off."
        let key = "\(stack) " + (escaped ? "escaped " + scopes.joined(separator: ",") : test ?? "outside every test")
        guard Reported.shared.insert(key) else { return }
        if CapturedStackReports.shared.capture(message) {
            return
        } else if let current = Test.current, CapturedTestFailures.current == nil {
            ContextReport(message).record(at: current.sourceLocation)
        } else if escaped, let soleScope {
            // NB: no test is current in escaped work, so the issue has no test to go to; at the
            // one open test's declaration it points at the user's code, not at this file.
            ContextReport(message).record(at: soleScope)
        } else {
            reportTestFailure(message)
        }
    }

    package static func loadedTwice(_ report: String) {
        if let current = Test.current, CapturedTestFailures.current == nil {
            ContextReport(report).record(at: current.sourceLocation)
        } else {
            reportTestFailure(report)
        }
    }
}

/// The reports made so far, so each is made once.
final class Reported: Sendable {
    static let shared = Reported()
    private let keys = LockedBox<Set<String>>([])

    /// Adds `key`; returns whether it was new.
    func insert(_ key: String) -> Bool { keys.withLock { $0.insert(key).inserted } }
}

/// The tests that run inside an environment scope now, by name and, for Swift Testing's, where
/// the test is declared.
package final class OpenTestScopes: Sendable {
    static let shared = OpenTestScopes()
    private let open = LockedBox<[UUID: (name: String, location: SourceLocation?)]>([:])

    package init() {}

    /// The open scopes' names, sorted, and where the test of the only open scope is declared:
    /// `nil` when several are open (tests run in parallel, and which one's work escaped can't
    /// be told), or when the only one is an XCTest test's.
    package var snapshot: (names: [String], soleLocation: SourceLocation?) {
        open.withLock { open in (open.values.map(\.name).sorted(), open.count == 1 ? open.values.first?.location : nil) }
    }

    /// Runs `body` with `name` among the open test scopes.
    package func with<R>(_ name: String, at location: SourceLocation? = nil, _ body: () async throws -> R) async rethrows -> R {
        let key = UUID()
        open.withLock { $0[key] = (name, location) }
        defer { _ = open.withLock { $0.removeValue(forKey: key) } }
        return try await body()
    }

    /// Runs `body` with `name` among the open test scopes.
    package func with<R>(_ name: String, _ body: () throws -> R) rethrows -> R {
        let key = UUID()
        open.withLock { $0[key] = (name, nil) }
        defer { _ = open.withLock { $0.removeValue(forKey: key) } }
        return try body()
    }
}

/// The XCTest test running now, as XCTest tells its observers.
// Safe: its one stored property is a lock box (`NSObject` subclasses can only say `Sendable` this way).
final class XCTestWatcher: NSObject, XCTestObservation, @unchecked Sendable {
    static let shared: XCTestWatcher = {
        let watcher = XCTestWatcher()
        XCTestObservationCenter.shared.addTestObserver(watcher)
        return watcher
    }()
    private let current = LockedBox<String?>(nil)

    var running: String? { current.withLock { $0 } }

    func testCaseWillStart(_ testCase: XCTestCase) { current.withLock { $0 = testCase.name } }
    func testCaseDidFinish(_ testCase: XCTestCase) { current.withLock { $0 = nil } }
}

/// Reports about one stack that HabitatTesting's own tests collect instead of failing: a read
/// from a detached task has no task-local capture, so the capture is by the stack's
/// declaration, process-wide.
package final class CapturedStackReports: Sendable {
    package static let shared = CapturedStackReports()
    private let captures = LockedBox<[String: [String]]>([:])

    /// Collects reports about the stack made at `fileID`:`line` while `body` runs.
    package func collect(stackAt fileID: String, line: UInt, _ body: () async throws -> Void) async rethrows -> [String] {
        let key = "\(fileID):\(line)"
        captures.withLock { $0[key] = [] }
        defer { _ = captures.withLock { $0.removeValue(forKey: key) } }
        try await body()
        return captures.withLock { $0[key] ?? [] }
    }

    /// Keeps `message` if it is about a stack being collected; returns whether it did.
    func capture(_ message: String) -> Bool {
        captures.withLock { captures in
            guard let key = captures.keys.first(where: { message.contains("the stack made at \($0)") }) else { return false }
            captures[key, default: []].append(message)
            return true
        }
    }
}

/// A report of Habitat's, as Swift Testing shows it: an issue with the whole message as its
/// comment ("Issue recorded", then "↳ [Habitat] …"), never an error, which Swift Testing would
/// headline "Caught error:" as if the test had thrown.
struct ContextReport {
    let message: String

    init(_ message: String) { self.message = message }

    func record(at location: SourceLocation) {
        Issue.record(Comment(rawValue: "[Habitat] " + message), sourceLocation: location)
    }
}
