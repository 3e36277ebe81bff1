import Foundation

/// What an app's refresh call found out about a session.
public enum SessionRefresh<User: Sendable>: Sendable {
    /// The server accepted the session and issued `token`; `user` carries fresh user data, or
    /// `nil` to keep the user as it was.
    case refreshed(token: AuthToken, user: User? = nil)
    /// The server no longer accepts the session: log out.
    case ended
    /// The request provably never left this device (offline, a connection refused, a name that
    /// didn't resolve, cancelled before it was sent): nothing was spent, the session is kept,
    /// and a later refresh may try again. Say it only when it is certain: a request that may
    /// have reached the server may have spent a rotating refresh token.
    case notSent
}

extension SessionRefresh {
    /// Whether `error`, thrown by an app's refresh, says its request never left the device: a
    /// `URLError` of no connection (offline, no such host, a connection refused, data not
    /// allowed). Anything else may have reached the server.
    package static func neverSent(_ error: any Error) -> Bool {
        guard let error = error as? URLError else { return false }
        switch error.code {
        case .notConnectedToInternet, .cannotFindHost, .cannotConnectToHost, .dnsLookupFailed, .dataNotAllowed,
             .internationalRoamingOff, .callIsActive, .appTransportSecurityRequiresSecureConnection:
            return true
        default:
            return false
        }
    }
}
