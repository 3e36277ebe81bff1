public import Foundation

/// Why a session transition could not happen.
///
/// When one of these is thrown, the stack is exactly as it was before the call.
public enum SessionError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The operation needs a signed-in user and nobody is logged in.
    case notLoggedIn(operation: String)
    /// No signed-in account has this name (see ``EnvironmentSchema/accountID(of:)``).
    case unknownAccount(String, operation: String)

    /// A message that names the failed operation.
    public var description: String {
        switch self {
        case .notLoggedIn(let operation):
            "\(operation) needs a signed-in user, but nobody is logged in"
        case .unknownAccount(let name, let operation):
            "\(operation): no signed-in account is named \"\(name)\""
        }
    }
}

extension SessionError: LocalizedError {
    /// The same one-line message as `description`, so `localizedDescription` shows it too.
    public var errorDescription: String? { description }
}
