/// Services that need to know who is signed in: an API client that signs requests with the
/// token, an analytics client that tags events with the user.
///
/// When an app's `Services` type conforms, every transition that changes the session hands the
/// new session to ``sessionChanged(to:)`` on the new environment's services, in the same atomic
/// step: ``EnvironmentStack/login(user:token:fileID:line:)``, ``EnvironmentStack/logout(fileID:line:)`` (with `nil`),
/// ``EnvironmentStack/updateCurrentUser(_:fileID:line:)``, a refresh and a restore. No reader ever
/// sees a session whose services still know the previous one.
///
/// ```swift
/// struct AppServices: SessionDependent, Sendable {
///     var api: APIClient
///     var analytics: Analytics
///
///     mutating func sessionChanged(to session: UserSession<Account>?) {
///         api.token = session?.token
///         analytics.userID = session?.user.id
///     }
/// }
/// ```
public protocol SessionDependent {
    /// The app's user type, the schema's ``EnvironmentSchema/User``.
    associatedtype User

    /// Updates the services for a new or changed session, or for none after logout.
    ///
    /// It runs inside the transition's change, so it must not write to the stack (a login, an
    /// update, a push): each such write makes the change run again, and a write on every run
    /// would never let it commit, so that stops the program with a message naming the
    /// transition. Write after the transition returns instead.
    /// - Parameter session: The session now, with its user and token, or `nil` when logged out.
    mutating func sessionChanged(to session: UserSession<User>?)
}
