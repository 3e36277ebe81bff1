public import Foundation

/// Who is signed in, with which credential, and how sure the app is that it still holds.
///
/// An ``HabitatEnvironment`` has a session while a user is logged in and `nil` otherwise.
public struct UserSession<User: Sendable>: Sendable {
    /// The signed-in user.
    public var user: User
    /// The credential the app sends to its server.
    public var token: AuthToken
    /// Whether the session came from a fresh login or from disk, not yet confirmed.
    public var state: AuthState

    /// Creates a session.
    /// - Parameters:
    ///   - user: The signed-in user.
    ///   - token: The credential.
    ///   - state: ``AuthState/authenticated`` for a fresh login (the default), or
    ///     ``AuthState/restored`` for one read back from disk.
    public init(user: User, token: AuthToken, state: AuthState = .authenticated) {
        self.user = user
        self.token = token
        self.state = state
    }

    /// Whether the session's token has expired at `date`.
    /// - Parameter date: The moment to check, usually `environment.now()`.
    /// - Returns: `true` when the token has an expiry date at or before `date`.
    public func isExpired(at date: Date) -> Bool {
        token.isExpired(at: date)
    }
}

extension UserSession: Equatable where User: Equatable {}
extension UserSession: Hashable where User: Hashable {}

/// How a session came to be, and so how far the app can trust it.
public enum AuthState: String, Sendable, Hashable, Codable, CaseIterable {
    /// The user logged in (or the session was refreshed) during this launch.
    case authenticated
    /// The session was read back from disk at launch and the server has not confirmed it yet.
    ///
    /// An app typically shows the user's data at once and refreshes the session in the
    /// background.
    case restored
    /// The session was read back from disk, but its token could not be read yet: the secret
    /// store was unavailable (a locked device's Keychain, an I/O error). The user's data is
    /// there; the token is empty.
    ///
    /// Nothing was deleted. Restoring again once the secret store can be read (on Apple
    /// platforms, when protected data becomes available) brings the token back, and so does
    /// `EnvironmentStack.refreshSession(account:using:)` while autosave is on. Until then,
    /// `EnvironmentStack.validSession(refreshingWithin:using:)` returns `nil`.
    case awaitingToken
}
