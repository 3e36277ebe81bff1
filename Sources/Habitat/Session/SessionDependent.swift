/// Services that need to know the session's token, such as an API client that signs requests.
///
/// When an app's `Services` type conforms, ``EnvironmentStack/login(user:token:)`` calls
/// ``sessionTokenChanged(to:)`` with the new token on the new environment's services, and
/// ``EnvironmentStack/logout()`` calls it with `nil`, in the same atomic transition. No reader
/// ever sees a session whose services still carry the previous token.
///
/// ```swift
/// struct AppServices: SessionDependent, Sendable {
///     var api: APIClient
///     var analytics: Analytics
///
///     mutating func sessionTokenChanged(to token: AccessToken?) {
///         api = api.authorized(with: token)
///     }
/// }
/// ```
public protocol SessionDependent {
    /// Updates the services for a new token, or for no token after logout.
    /// - Parameter token: The new session's token, or `nil` when the user logged out.
    mutating func sessionTokenChanged(to token: AccessToken?)
}

extension Environment {
    /// Updates the services for `token` (see ``EnvironmentSchema/services(_:withToken:)``).
    @inlinable
    mutating func applySessionToken(_ token: AccessToken?) {
        services = App.services(services, withToken: token)
    }
}
