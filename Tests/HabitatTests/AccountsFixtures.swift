import Foundation
import Habitat
import HabitatPersistence

/// A user told apart by `id`: the default account name.
struct Member: Codable, Sendable, Hashable, Identifiable {
    var id: String
    var name: String

    static let ada = Member(id: "ada", name: "Ada")
    static let grace = Member(id: "grace", name: "Grace")
    static let alan = Member(id: "alan", name: "Alan")
}

/// Services that sign requests with the session they were handed: what a mix would show.
struct MemberServices: Sendable, SessionDependent {
    var token: AuthToken?
    var member: Member?

    mutating func sessionChanged(to session: UserSession<Member>?) {
        token = session?.token
        member = session?.user
    }
}

enum AccountsApp: EnvironmentSchema {
    typealias Services = MemberServices
    typealias User = Member
}

func makeAccountsStack() -> EnvironmentStack<AccountsApp> {
    EnvironmentStack(HabitatEnvironment(services: MemberServices(), now: { fixedDate }))
}

/// A token that names its account, so a token crossing accounts shows.
func memberToken(_ member: Member, _ serial: Int) -> AuthToken {
    AuthToken("\(member.id)#\(serial)", expiresAt: fixedDate.addingTimeInterval(3600))
}

/// The account a ``memberToken(_:_:)`` belongs to.
func owner(of token: AuthToken) -> String {
    String(token.secret.prefix { $0 != "#" })
}

/// A server that rotates refresh tokens and revokes nothing quietly: a token it already rotated
/// is refused, and counted, as servers that detect reuse do.
final class RotatingServer: @unchecked Sendable {
    // Safe: every property is touched only with `lock` held.
    private let lock = NSLock()
    private var current: [String: String] = [:]
    private var serial = 0
    private(set) var reusedTokens: [String] = []

    /// Signs `member` in: a new token, the only valid one for the account.
    func signIn(_ member: Member) -> AuthToken {
        lock.withLock {
            serial += 1
            let token = memberToken(member, serial)
            current[member.id] = token.secret
            return token
        }
    }

    /// The next token for `token`'s account; `nil` (the session is ended) for a token that isn't
    /// the account's current one, which is recorded as a reuse when the account had rotated it.
    func refresh(_ token: AuthToken) -> AuthToken? {
        lock.withLock {
            let account = owner(of: token)
            guard current[account] == token.secret else {
                reusedTokens.append(token.secret)
                return nil
            }
            serial += 1
            let next = memberToken(Member(id: account, name: account), serial)
            current[account] = next.secret
            return next
        }
    }

    /// Forgets `member`'s session, as a sign-out does on the server.
    func signOut(_ name: String) {
        lock.withLock { current[name] = nil }
    }
}
