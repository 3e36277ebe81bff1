public import Foundation

/// A bearer credential: the secret string a server accepts, and when it stops being accepted.
///
/// The secret is readable only through ``secret``. Every other way of looking at a token
/// (`description`, `debugPrint`, `dump`, string interpolation, a `Mirror`) shows
/// `<redacted>` instead, so a token never lands in a log line or an error message by accident.
///
/// `AuthToken` is deliberately not `Codable`: encoding it along with the rest of a session
/// would put it in a plain file. Habitat stores it through a secret store instead.
///
/// ```swift
/// let token = AuthToken("s3cr3t", expiresAt: Date().addingTimeInterval(3600))
/// print(token)           // AuthToken(<redacted>, expires 2026-11-22 09:00:00 +0000)
/// request.setValue("Bearer \(token.secret)", forHTTPHeaderField: "Authorization")
/// ```
public struct AuthToken: Sendable, Hashable {
    /// The secret value. Read it only to authorise a request or to store it as a secret.
    public let secret: String
    /// When the token stops being accepted, if the server said.
    public var expiresAt: Date?

    /// Creates a token.
    /// - Parameters:
    ///   - secret: The secret value the server accepts.
    ///   - expiresAt: When the token expires; `nil` when unknown or never.
    public init(_ secret: String, expiresAt: Date? = nil) {
        self.secret = secret
        self.expiresAt = expiresAt
    }

    /// Whether the token has expired at `date`.
    ///
    /// A token without an expiry date never expires by this measure.
    /// - Parameter date: The moment to check, usually `environment.now()`.
    /// - Returns: `true` when `expiresAt` is at or before `date`.
    public func isExpired(at date: Date) -> Bool {
        guard let expiresAt else { return false }
        return expiresAt <= date
    }
}

// NB: not `CustomDebugStringConvertible`: `debugPrint` and `String(reflecting:)` fall back to
// `description`, which is redacted.
extension AuthToken: CustomStringConvertible, CustomReflectable {
    /// A description that never contains the secret.
    public var description: String {
        if let expiresAt {
            return "AuthToken(<redacted>, expires \(expiresAt))"
        }
        return "AuthToken(<redacted>)"
    }

    /// A mirror without the secret, so `dump` and reflection-based printers stay safe.
    public var customMirror: Mirror {
        Mirror(self, children: ["secret": "<redacted>", "expiresAt": expiresAt as Any], displayStyle: .struct)
    }
}
