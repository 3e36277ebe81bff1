public import Habitat

/// Runs `operation` and checks that it made exactly the changes of `kinds` to `stack`, in order.
///
/// On a mismatch it reports one failure listing what happened, each change with the user and
/// depth before and after, to Swift Testing or XCTest:
///
/// ```swift
/// let changes = try await expectChanges(in: appEnvironment, [.push, .login]) {
///     try await model.signIn()
/// }
/// // failure: expected [push, login], got [login]:
/// //   1. login: user nil -> TestUser(id: 1, name: "Ada"), depth 1 -> 1
/// ```
///
/// Changes are observed on the stack the calling task acts on (its scope, inside one).
///
/// - Parameters:
///   - stack: The stack to watch.
///   - kinds: The kinds of change expected, in order.
///   - fileID: Where the failure is attributed: the caller's file, by default.
///   - filePath: The caller's file path, by default.
///   - line: The caller's line, by default.
///   - column: The caller's column, by default.
///   - operation: The work to watch.
/// - Returns: The observed changes, for further checks.
@discardableResult
public func expectChanges<App: EnvironmentSchema, R>(
    in stack: EnvironmentStack<App>,
    _ kinds: [EnvironmentChangeKind],
    fileID: String = #fileID,
    filePath: StaticString = #filePath,
    line: UInt = #line,
    column: UInt = #column,
    during operation: () async throws -> R
) async rethrows -> [EnvironmentChange<App>] {
    let changes = try await recordChanges(in: stack, during: operation)
    let observed = changes.map(\.kind)
    if observed != kinds {
        reportTestFailure(
            "expected changes \(kinds), got \(observed)" + describe(changes),
            fileID: fileID, filePath: filePath, line: line, column: column
        )
    }
    return changes
}

/// Runs `operation` and checks that it logged `user` in on `stack`: that a login happened, and
/// that afterwards `user` is the current user.
///
/// ```swift
/// try await expectLogin(in: appEnvironment, of: .ada) {
///     try await LoginModel().submit(name: "ada", password: "secret")
/// }
/// ```
///
/// - Parameters:
///   - stack: The stack to watch.
///   - user: The user who should be logged in afterwards.
///   - fileID: Where the failure is attributed: the caller's file, by default.
///   - filePath: The caller's file path, by default.
///   - line: The caller's line, by default.
///   - column: The caller's column, by default.
///   - operation: The work to watch.
public func expectLogin<App: EnvironmentSchema, R>(
    in stack: EnvironmentStack<App>,
    of user: App.User,
    fileID: String = #fileID,
    filePath: StaticString = #filePath,
    line: UInt = #line,
    column: UInt = #column,
    during operation: () async throws -> R
) async rethrows where App.User: Equatable {
    let before = stack.current.currentUser
    let changes = try await recordChanges(in: stack, during: operation)
    let after = stack.current.currentUser
    guard changes.contains(where: { $0.kind == .login }) else {
        reportTestFailure(
            "expected a login of \(user), but no login happened; user \(describe(before)) -> \(describe(after))"
                + describe(changes),
            fileID: fileID, filePath: filePath, line: line, column: column
        )
        return
    }
    if after != user {
        reportTestFailure(
            "expected \(user) to be logged in, but the current user is \(describe(after)) (was \(describe(before)))"
                + describe(changes),
            fileID: fileID, filePath: filePath, line: line, column: column
        )
    }
}

/// Runs `operation` and returns the changes it made to `stack`, in order.
private func recordChanges<App: EnvironmentSchema, R>(
    in stack: EnvironmentStack<App>,
    during operation: () async throws -> R
) async rethrows -> [EnvironmentChange<App>] {
    let (stream, stop) = stack.recordChanges()
    do {
        _ = try await operation()
    } catch {
        stop()
        throw error
    }
    stop()
    var changes: [EnvironmentChange<App>] = []
    for await change in stream { changes.append(change) }
    return changes
}

private func describe<User>(_ user: User?) -> String {
    user.map { String(describing: $0) } ?? "nil (logged out)"
}

private func describe<App>(_ changes: [EnvironmentChange<App>]) -> String {
    guard !changes.isEmpty else { return "" }
    return ":\n" + changes.enumerated().map { index, change in
        "  \(index + 1). \(change.kind): user \(describe(change.old.currentUser)) -> \(describe(change.new.currentUser)), depth -> \(change.depth)"
    }.joined(separator: "\n")
}
