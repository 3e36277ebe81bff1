/// What an app's refresh call found out about a session.
public enum SessionRefresh<User: Sendable>: Sendable {
    /// The server accepted the session and issued `token`; `user` carries fresh user data, or
    /// `nil` to keep the user as it was.
    case refreshed(token: AuthToken, user: User? = nil)
    /// The server no longer accepts the session: log out.
    case ended
}
