import Foundation
public import Habitat

/// Members, their passwords and the directory's own bearer tokens, app-wide: what a real server
/// keeps in its user database. Every instance of the fleet starts with the same members.
///
/// Signing in (`POST /signin`) makes a session in the fleet's session backend; the directory's
/// own tokens are the load test's (`tok-<id>`, 1...1,000, made by ``seedLoadTestMembers(_:)``)
/// and those ``issueToken(for:expiresAt:)`` makes (`tok-<id>-<random>`).
// Safe: `state` is read and written only with `lock` held. NB: NSLock rather than
// Synchronization.Mutex, whose futex the thread sanitizer can't see (it reports false races).
public final class MemberDirectory: @unchecked Sendable {
    private struct State {
        var members: [Int: Member] = [:]
        var tokens: [String: (id: Int, expiresAt: Date?)] = [:]
        var passwords: [String: (id: Int, password: String)] = [:]
    }

    private let lock = NSLock()
    private var state_ = State()

    private func withState<R>(_ body: (inout State) -> R) -> R {
        lock.withLock { body(&state_) }
    }

    public init() {
        register(Member(id: 1, name: "Ada"), password: "analytical")
        register(Member(id: 2, name: "Grace"), password: "cobol")
    }

    /// Adds a member who can sign in with `password`.
    public func register(_ member: Member, password: String) {
        withState {
            $0.members[member.id] = member
            $0.passwords[member.name.lowercased()] = (member.id, password)
        }
    }

    /// Members 1...count, with the tokens `tok-1`...`tok-<count>` unless `withTokens` is false,
    /// for the load test.
    public func seedLoadTestMembers(_ count: Int, withTokens: Bool = true) {
        withState {
            for id in 1...count {
                if $0.members[id] == nil { $0.members[id] = Member(id: id, name: "member-\(id)") }
                if withTokens { $0.tokens["tok-\(id)"] = (id, nil) }
            }
        }
    }

    /// Member `id`, if there is one.
    public func member(id: Int) -> Member? {
        withState { $0.members[id] }
    }

    /// The member `name` names, if `password` is theirs.
    public func member(name: String, password: String) -> Member? {
        withState { state in
            guard let entry = state.passwords[name.lowercased()], entry.password == password else { return nil }
            return state.members[entry.id]
        }
    }

    /// A new bearer token for member `id`, valid until `expiresAt`.
    public func issueToken(for id: Int, expiresAt: Date?) -> AuthToken {
        let token = "tok-\(id)-\(UUID().uuidString)"
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
}

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
