import Crypto
import Foundation
public import Habitat
public import HabitatServerSessions
import _CryptoExtras

/// Members, their passwords and the directory's own bearer tokens, app-wide: what a real server
/// keeps in its user database. Every instance of the fleet starts with the same members.
///
/// Signing in (`POST /signin`) makes a session in the fleet's session backend. Passwords are
/// kept as salted PBKDF2-SHA512 hashes (210,000 rounds, OWASP's figure for that hash) and
/// compared in constant time; an unknown name costs the same hash, so timing doesn't say which
/// names exist. Five attempts for a name within a minute refuse its sign-ins until the minute
/// has passed; a sign-in succeeds only within them, and forgets them. The attempts, and the cap
/// of ten sessions per member, are counted in the fleet's session backend (shared by every
/// instance on PostgreSQL), each attempt recorded before its hash, so concurrent sign-ins can't
/// pass the limit. Hashes run on a ``HashingPool``; past its queue a sign-in is ``SignIn/busy``. The directory's own tokens exist only in load-test mode
/// (``seedLoadTestMembers(_:secret:)``) and those ``issueToken(for:expiresAt:)`` makes.
// Safe: `state` is read and written only with `lock` held. NB: NSLock rather than
// Synchronization.Mutex, whose futex the thread sanitizer can't see (it reports false races).
public final class MemberDirectory: @unchecked Sendable {
    private struct Password {
        var id: Int
        var salt: Data
        var hash: SymmetricKey
    }

    private struct State {
        var members: [Int: Member] = [:]
        var tokens: [String: (id: Int, expiresAt: Date?)] = [:]
        var passwords: [String: Password] = [:]
    }

    /// What a sign-in found.
    public enum SignIn: Sendable, Equatable {
        case member(Member)
        /// Wrong name or password.
        case refused
        /// Too many attempts for this name lately: try again later.
        case tooManyAttempts
        /// Too many sign-ins are hashing now: try again in a second (a 503 with `Retry-After`).
        case busy
    }

    /// Attempts a name may have within ``failureWindow`` before its sign-ins are refused.
    public static let failureLimit = 5
    /// How long an attempt counts.
    public static let failureWindow = Duration.seconds(60)
    /// Sessions a member may hold across the fleet; signing in past it ends the oldest.
    public static let sessionLimit = 10

    /// Where the password hashes run.
    public let hashing: HashingPool

    private let lock = NSLock()
    private var state_ = State()
    private static let dummySalt = Data(repeating: 0, count: 16)

    private func withState<R>(_ body: (inout State) -> R) -> R {
        lock.withLock { body(&state_) }
    }

    /// - Parameter hashing: Where the password hashes run.
    public init(hashing: HashingPool = HashingPool()) {
        self.hashing = hashing
        register(Member(id: 1, name: "Ada"), password: "analytical")
        register(Member(id: 2, name: "Grace"), password: "cobol")
    }

    /// Adds a member who can sign in with `password`.
    public func register(_ member: Member, password: String) {
        var generator = SystemRandomNumberGenerator()
        let salt = Data((0..<16).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
        let entry = Password(id: member.id, salt: salt, hash: Self.hash(password, salt: salt))
        withState {
            $0.members[member.id] = member
            $0.passwords[member.name.lowercased()] = entry
        }
    }

    /// The load test's members 1...count (ids ``loadTestMemberID(_:)``, apart from every real
    /// member's, named `load-test-<n>`), each with the bearer token `tok-<id>-<secret>`, for the
    /// load test only: the server makes them when started with `--load-test` (loopback only),
    /// with a secret of the run's own. No real member gets a load-test token.
    public func seedLoadTestMembers(_ count: Int, secret: String?) {
        withState {
            for n in 1...count {
                let id = loadTestMemberID(n)
                if $0.members[id] == nil { $0.members[id] = Member(id: id, name: "load-test-\(n)") }
                if let secret { $0.tokens[loadTestToken(id, secret: secret)] = (id, nil) }
            }
        }
    }

    /// Member `id`, if there is one.
    public func member(id: Int) -> Member? {
        withState { $0.members[id] }
    }

    /// The member `name` names, if `password` is theirs. The attempt is recorded in `limits`
    /// before the hash (``failureLimit`` within `window`), and forgotten on success.
    /// - Throws: `SessionBackendError` when `limits` can't be reached (the route answers 503).
    public func signIn(
        name: String,
        password: String,
        limits: any SessionBackend,
        window: Duration = failureWindow
    ) async throws(SessionBackendError) -> SignIn {
        let name = name.lowercased()
        let key = "signin:" + name
        guard try await limits.recordAttempt(key, limit: Self.failureLimit, within: window) else { return .tooManyAttempts }
        let entry = withState { $0.passwords[name] }
        // NB: an unknown name is hashed too, so it takes as long as a known one.
        guard let hash = await hashing.run({ Self.hash(password, salt: entry?.salt ?? Self.dummySalt) }) else { return .busy }
        // `SymmetricKey`'s `==` compares in constant time.
        guard let entry, hash == entry.hash, let member = withState({ $0.members[entry.id] }) else { return .refused }
        try await limits.forgetAttempts(key)
        return .member(member)
    }

    /// Notes in `limits` that member `id` signed in with session `sessionID`; returns the stored
    /// keys (`StoredSession.key(for:)`) of the member's sessions past ``sessionLimit`` (the
    /// oldest), which the caller ends.
    public func noteSession(_ sessionID: String, for id: Int, in limits: any SessionBackend) async throws(SessionBackendError) -> [String] {
        try await limits.recordSession(StoredSession.key(for: sessionID), owner: "member:\(id)", limit: Self.sessionLimit)
    }

    /// A new bearer token for member `id`, valid until `expiresAt`: 32 random bytes.
    public func issueToken(for id: Int, expiresAt: Date?) -> AuthToken {
        var generator = SystemRandomNumberGenerator()
        let random = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: .min ... .max, using: &generator)) }.joined()
        let token = "tok-\(id)-\(random)"
        withState { $0.tokens[token] = (id, expiresAt) }
        return AuthToken(token, expiresAt: expiresAt)
    }

    /// The member a bearer token belongs to, if the token is known and has not expired at `now`.
    public func member(forToken token: String, at now: Date = Date()) -> Member? {
        withState { state in
            guard let entry = state.tokens[token], (entry.expiresAt.map { $0 > now } ?? true) else { return nil }
            return state.members[entry.id]
        }
    }

    /// Renames the member `id`; returns the updated member.
    public func rename(_ id: Int, to name: String) -> Member? {
        withState {
            $0.members[id]?.name = name
            return $0.members[id]
        }
    }

    private static func hash(_ password: String, salt: Data) -> SymmetricKey {
        // NB: PBKDF2-SHA512 with 210,000 rounds can't fail; the try is the API's.
        (try? KDF.Insecure.PBKDF2.deriveKey(
            from: Data(password.utf8), salt: salt, using: .sha512, outputByteCount: 32, rounds: 210_000
        )) ?? SymmetricKey(size: .bits256)
    }
}

/// The load test's bearer token for member `id`: `tok-<id>-<secret>`.
public func loadTestToken(_ id: Int, secret: String) -> String { "tok-\(id)-\(secret)" }

/// The id of the load test's member `n` (1...1,000): from 1,000,001 on, so no load-test token
/// names a real member (`tok-1-<secret>` signs nobody in).
public func loadTestMemberID(_ n: Int) -> Int { 1_000_000 + n }

/// A second service a handler calls: it reads the request's member from the environment itself.
public struct ProjectCatalog: Sendable {
    public init() {}

    /// The projects of the member signed in to the calling request.
    public func projectsOfCurrentMember() async -> [String] {
        await Task.yield()   // as a database call would suspend
        guard let member = appEnvironment.current.currentUser else { return [] }
        return ["\(member.name)'s notes", "\(member.name)'s garden"]
    }
}

// NB: the directory holds bearer tokens (the load-test secret is in each of them), password
// hashes and the members' sessions: `dump`, `Mirror` and `print` show how many members it knows,
// nothing else.
extension MemberDirectory: CustomStringConvertible, CustomReflectable {
    /// How many members the directory knows; never a token, a hash or a session.
    public var description: String { "MemberDirectory(\(withState { $0.members.count }) members)" }

    /// A mirror with the number of members only.
    public var customMirror: Mirror {
        Mirror(self, children: ["members": withState { $0.members.count }], displayStyle: .class)
    }
}
