public import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HabitatServerSessions
import Logging
import ServiceLifecycle

// What the fleet shares: every instance reads and writes a member's session in one backend
// (`--backend memory|postgres`), so a member signed in on one instance is known to all, a
// deploy signs nobody out, and two requests on one session never lose an update.

/// What the fleet keeps per signed-in member.
public struct MemberSession: Codable, Sendable, Equatable {
    /// The member, as the session's last write left it (`PATCH /me` renames).
    public var member: Member
    /// Counts `POST /me/visits`, from any instance.
    public var visits: Int
    /// The member's token at an upstream service, which this server holds for them (a
    /// backend-for-frontend): refreshed once across the fleet when it expires.
    public var upstream: UpstreamToken

    public init(member: Member, visits: Int = 0, upstream: UpstreamToken) {
        self.member = member
        self.visits = visits
        self.upstream = upstream
    }
}

/// An upstream access token and the refresh token that renews it.
public struct UpstreamToken: Codable, Sendable, Equatable {
    /// Empty until the first refresh.
    public var accessToken: String
    /// Spent by a refresh: the upstream answers with a new one, and treats a second use of an
    /// old one as theft.
    public var refreshToken: String
    public var expiresAt: Date

    public init(accessToken: String, refreshToken: String, expiresAt: Date) {
        self.accessToken = accessToken
        self.refreshToken = refreshToken
        self.expiresAt = expiresAt
    }

    /// Whether the access token needs a refresh before use: missing, or expiring within a minute.
    public func isStale(at now: Date) -> Bool { accessToken.isEmpty || expiresAt <= now.addingTimeInterval(60) }
}

extension UpstreamToken: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The expiry only: both tokens are credentials.
    public var description: String { "UpstreamToken(<redacted>, expires \(expiresAt))" }
    public var debugDescription: String { description }
    /// A mirror without the tokens, so `dump` and reflection-based printers stay safe.
    public var customMirror: Mirror {
        Mirror(self, children: ["accessToken": "<redacted>", "refreshToken": "<redacted>", "expiresAt": expiresAt], displayStyle: .struct)
    }
}

/// The upstream's token endpoint: `POST {url}` with `refresh_token=…`, answering
/// `{"access_token", "refresh_token", "expires_in"}` (OAuth 2's refresh grant, trimmed).
public struct UpstreamClient: Sendable {
    public var url: URL
    /// How long a refresh may take; the fleet's refresh lease is longer than this.
    public var timeout: Duration

    public init(url: URL, timeout: Duration = .seconds(10)) {
        self.url = url
        self.timeout = timeout
    }

    /// What went wrong at the upstream.
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// Spends `token.refreshToken` for a new token pair.
    public func refresh(_ token: UpstreamToken) async throws -> UpstreamToken {
        struct Answer: Decodable {
            var access_token: String
            var refresh_token: String
            var expires_in: Double
        }
        var request = URLRequest(url: url, timeoutInterval: Double(timeout.components.seconds))
        request.httpMethod = "POST"
        request.setValue("application/x-www-form-urlencoded", forHTTPHeaderField: "Content-Type")
        request.httpBody = Data("grant_type=refresh_token&refresh_token=\(token.refreshToken)".utf8)
        let (body, response) = try await URLSession.shared.data(for: request)
        // NB: the upstream's answer isn't quoted: an error body can name tokens.
        guard let status = (response as? HTTPURLResponse)?.statusCode, status == 200 else {
            throw Failure(description: "the upstream refused the refresh (HTTP \((response as? HTTPURLResponse)?.statusCode ?? 0))")
        }
        let answer = try JSONDecoder().decode(Answer.self, from: body)
        return UpstreamToken(
            accessToken: answer.access_token, refreshToken: answer.refresh_token, expiresAt: Date().addingTimeInterval(answer.expires_in)
        )
    }
}

/// Purges the fleet's expired sessions every `interval` while the server runs: a session
/// expires unseen when its member never comes back, and the backend would keep it otherwise.
/// Every instance runs one; a purge is one statement.
/// Follows the database's change feed for the instance's session cache, until shutdown.
struct SessionCacheFeed: Service {
    let cache: CachedSessionBackend

    func run() async {
        await cancelWhenGracefulShutdown { await cache.follow() }
    }
}

struct SessionPurge: Service {
    let sessions: ServerSessions<MemberSession>
    let interval: Duration
    let logger: Logger

    func run() async {
        await cancelWhenGracefulShutdown {
            await sessions.purgeExpired(every: interval) { logger.warning("purging expired sessions failed: \($0)") }
        }
    }
}
