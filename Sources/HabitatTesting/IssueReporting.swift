import Foundation
import Testing
import XCTest

/// Where a test failure goes: Swift Testing, XCTest, or, outside tests, a runtime warning.
///
/// Under Swift Testing (inside a `@Test`) the failure is recorded with `Issue.record`; in an
/// XCTest test with `XCTFail`; anywhere else (a debug run of the app, a preview) it is printed to
/// standard error as a warning, and execution goes on.
///
/// Code that escapes a Swift Testing test's task, such as a `Task.detached`, has no current
/// test. In a test process, such a failure goes to both frameworks: Swift Testing reports it
/// (for an unknown test) and fails the run, and XCTest fails the XCTest test running, if any.
///
/// ```swift
/// reportTestFailure("APIClient.fetchUser is unimplemented")
/// ```
/// - Parameters:
///   - message: What went wrong.
///   - fileID: The file the failure is attributed to.
///   - filePath: The file's full path.
///   - line: The line.
///   - column: The column.
public func reportTestFailure(
    _ message: String,
    fileID: String = #fileID,
    filePath: StaticString = #filePath,
    line: UInt = #line,
    column: UInt = #column
) {
    if let capture = CapturedTestFailures.current {
        capture.append(message)
    } else if Test.current != nil {
        Issue.record(
            Comment(rawValue: message),
            sourceLocation: SourceLocation(fileID: fileID, filePath: "\(filePath)", line: Int(line), column: Int(column))
        )
    } else if isRunningXCTest {
        // NB: neither framework reports the other's failures here: XCTFail from a detached task
        // of a Swift Testing test goes nowhere, and so does Issue.record inside an XCTest test.
        // Each framework takes the one it can attribute.
        XCTFail(message, file: filePath, line: line)
        Issue.record(
            Comment(rawValue: message),
            sourceLocation: SourceLocation(fileID: fileID, filePath: "\(filePath)", line: Int(line), column: Int(column))
        )
    } else {
        let warning = "[Habitat] warning: \(message) (\(fileID):\(line))\n"
        FileHandle.standardError.write(Data(warning.utf8))
    }
}

/// Whether this process is an XCTest runner: the test bundle on Linux, or an Xcode test run.
let isRunningXCTest: Bool = {
    let environment = ProcessInfo.processInfo.environment
    if environment["XCTestConfigurationFilePath"] != nil || environment["XCTestBundlePath"] != nil {
        return true
    }
    let executable = ProcessInfo.processInfo.arguments.first ?? ""
    return executable.hasSuffix(".xctest") || executable.contains(".xctest/")
        || ProcessInfo.processInfo.processName.hasSuffix(".xctest")
        || ProcessInfo.processInfo.processName == "xctest"
}()

/// Failures that `reportTestFailure` hands to the calling task instead of recording them: for
/// HabitatTesting's own tests of what its helpers report, so a test whose point is a failure
/// message checks the message without printing a known issue in every run.
package final class CapturedTestFailures: Sendable {
    private let messages = LockedBox<[String]>([])

    @TaskLocal package static var current: CapturedTestFailures?

    func append(_ message: String) {
        messages.withLock { $0.append(message) }
    }

    /// Runs `body`, and returns the failures reported in it (and in its child tasks).
    package static func capture(_ body: () async throws -> Void) async rethrows -> [String] {
        let capture = CapturedTestFailures()
        try await $current.withValue(capture) { try await body() }
        return capture.messages.withLock { $0 }
    }

    /// Runs `body`, and returns the failures reported in it.
    package static func capture(_ body: () throws -> Void) rethrows -> [String] {
        let capture = CapturedTestFailures()
        try $current.withValue(capture) { try body() }
        return capture.messages.withLock { $0 }
    }
}
