public import Foundation
import Testing

/// The error an unimplemented endpoint throws after reporting the failure.
public struct UnimplementedError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The endpoint's name, such as `"APIClient.fetchUser"`.
    public let endpoint: String

    /// Creates the error for `endpoint`.
    /// - Parameter endpoint: The endpoint's name.
    public init(endpoint: String) { self.endpoint = endpoint }

    /// `"<endpoint> is unimplemented"`.
    public var description: String { "\(endpoint) is unimplemented" }
}

// NB: one overload per closure shape a service uses (sync or async, throwing or not, returning a
// value or Void), each generic over any number of arguments with a parameter pack. Swift picks
// the overload from the property's type, so `fetchUser: unimplementedEndpoint("APIClient.fetchUser")`
// works for `@Sendable (Int) async throws -> User` without spelling the type again.

/// An endpoint that fails the current test when called: it reports
/// "`name` is unimplemented" and throws ``UnimplementedError``.
///
/// Build a service whose every endpoint is unimplemented, and override in each test only the
/// endpoints the test expects to be called. Any other call fails the test, naming the endpoint:
///
/// ```swift
/// extension APIClient {
///     static let unimplemented = APIClient(
///         fetchUser: unimplementedEndpoint("APIClient.fetchUser"),
///         updateName: unimplementedEndpoint("APIClient.updateName")
///     )
/// }
/// ```
///
/// The failure goes to Swift Testing or XCTest, whichever runs the test; outside tests it is a
/// printed warning (see ``reportTestFailure(_:fileID:filePath:line:column:)``).
///
/// - Parameters:
///   - name: The endpoint's name, as it should appear in the failure.
///   - fileID: Where the endpoint was declared.
///   - filePath: Where the endpoint was declared.
///   - line: Where the endpoint was declared.
///   - column: Where the endpoint was declared.
/// - Returns: A closure that reports the failure and throws.
public func unimplementedEndpoint<each Argument, Result>(
    _ name: String,
    fileID: String = #fileID,
    filePath: StaticString = #filePath,
    line: UInt = #line,
    column: UInt = #column
) -> @Sendable (repeat each Argument) async throws -> Result {
    { (_: repeat each Argument) in
        reportUnimplemented(name, fileID: fileID, filePath: filePath, line: line, column: column)
        throw UnimplementedError(endpoint: name)
    }
}

/// A synchronous throwing endpoint that fails the current test when called.
///
/// See the asynchronous `unimplementedEndpoint(_:)` above for how to use it.
/// - Parameters:
///   - name: The endpoint's name.
///   - fileID: Where the endpoint was declared: the caller's file, by default.
///   - filePath: The caller's file path, by default.
///   - line: The caller's line, by default.
///   - column: The caller's column, by default.
/// - Returns: A closure that reports the failure and throws ``UnimplementedError``.
public func unimplementedEndpoint<each Argument, Result>(
    _ name: String,
    fileID: String = #fileID,
    filePath: StaticString = #filePath,
    line: UInt = #line,
    column: UInt = #column
) -> @Sendable (repeat each Argument) throws -> Result {
    { (_: repeat each Argument) in
        reportUnimplemented(name, fileID: fileID, filePath: filePath, line: line, column: column)
        throw UnimplementedError(endpoint: name)
    }
}

/// An asynchronous endpoint that can't throw: it fails the current test when called and
/// returns `placeholder`.
/// - Parameters:
///   - name: The endpoint's name.
///   - placeholder: What to return after reporting the failure.
///   - fileID: Where the endpoint was declared: the caller's file, by default.
///   - filePath: The caller's file path, by default.
///   - line: The caller's line, by default.
///   - column: The caller's column, by default.
/// - Returns: A closure that reports the failure and returns the placeholder.
public func unimplementedEndpoint<each Argument, Result: Sendable>(
    _ name: String,
    placeholder: Result,
    fileID: String = #fileID,
    filePath: StaticString = #filePath,
    line: UInt = #line,
    column: UInt = #column
) -> @Sendable (repeat each Argument) async -> Result {
    { (_: repeat each Argument) in
        reportUnimplemented(name, fileID: fileID, filePath: filePath, line: line, column: column)
        return placeholder
    }
}

/// A synchronous endpoint that can't throw: it fails the current test when called and returns
/// `placeholder`.
/// - Parameters:
///   - name: The endpoint's name.
///   - placeholder: What to return after reporting the failure.
///   - fileID: Where the endpoint was declared: the caller's file, by default.
///   - filePath: The caller's file path, by default.
///   - line: The caller's line, by default.
///   - column: The caller's column, by default.
/// - Returns: A closure that reports the failure and returns the placeholder.
public func unimplementedEndpoint<each Argument, Result: Sendable>(
    _ name: String,
    placeholder: Result,
    fileID: String = #fileID,
    filePath: StaticString = #filePath,
    line: UInt = #line,
    column: UInt = #column
) -> @Sendable (repeat each Argument) -> Result {
    { (_: repeat each Argument) in
        reportUnimplemented(name, fileID: fileID, filePath: filePath, line: line, column: column)
        return placeholder
    }
}

/// An asynchronous endpoint that returns nothing: it fails the current test when called.
/// - Parameters:
///   - name: The endpoint's name.
///   - fileID: Where the endpoint was declared: the caller's file, by default.
///   - filePath: The caller's file path, by default.
///   - line: The caller's line, by default.
///   - column: The caller's column, by default.
/// - Returns: A closure that reports the failure.
public func unimplementedEndpoint<each Argument>(
    _ name: String,
    fileID: String = #fileID,
    filePath: StaticString = #filePath,
    line: UInt = #line,
    column: UInt = #column
) -> @Sendable (repeat each Argument) async -> Void {
    { (_: repeat each Argument) in
        reportUnimplemented(name, fileID: fileID, filePath: filePath, line: line, column: column)
    }
}

/// A synchronous endpoint that returns nothing, such as an analytics call: it fails the
/// current test when called.
/// - Parameters:
///   - name: The endpoint's name.
///   - fileID: Where the endpoint was declared: the caller's file, by default.
///   - filePath: The caller's file path, by default.
///   - line: The caller's line, by default.
///   - column: The caller's column, by default.
/// - Returns: A closure that reports the failure.
public func unimplementedEndpoint<each Argument>(
    _ name: String,
    fileID: String = #fileID,
    filePath: StaticString = #filePath,
    line: UInt = #line,
    column: UInt = #column
) -> @Sendable (repeat each Argument) -> Void {
    { (_: repeat each Argument) in
        reportUnimplemented(name, fileID: fileID, filePath: filePath, line: line, column: column)
    }
}

/// Reports a call of an unimplemented endpoint: under Swift Testing at the running test's own
/// line (the stub's line says nothing about which test called it), naming where the stub was
/// made; elsewhere as ``reportTestFailure(_:fileID:filePath:line:column:)`` does.
func reportUnimplemented(_ name: String, fileID: String, filePath: StaticString, line: UInt, column: UInt) {
    let message = "\(name) is unimplemented (stubbed at \(fileID):\(line)): give this test a stub for it"
    if CapturedTestFailures.current == nil, let test = Test.current {
        Issue.record(Comment(rawValue: message), sourceLocation: test.sourceLocation)
    } else {
        reportTestFailure(message, fileID: fileID, filePath: filePath, line: line, column: column)
    }
}

extension UnimplementedError: LocalizedError {
    /// The same one-line message as `description`, so `localizedDescription` shows it too.
    public var errorDescription: String? { description }
}
