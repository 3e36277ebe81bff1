import Foundation
import Habitat
import HabitatPersistence
import HabitatTesting
import Testing

/// Random sequences of sign-in, switch, refresh (against a server that rotates refresh tokens
/// and refuses a reused one), sign-out of one, sign-out of all, and relaunch, each checked
/// against a model after every step.
@Suite struct AccountPropertyTests {
    static let pool: [Member] = [.ada, .grace, .alan, Member(id: "edsger", name: "Edsger")]

    @Test func noTokenCrossesAccountsNoneIsReusedAndTheActiveAccountSurvivesEveryRelaunch() async throws {
        var failures: [String] = []
        for seed in UInt64(1)...2_000 {
            if let failure = try await Self.run(seed: seed, steps: 30) { failures.append(failure) }
            if failures.count == 3 { break }
        }
        #expect(failures.isEmpty, "\(failures.joined(separator: "\n"))")
    }

    /// Runs one sequence; returns what went wrong, with the seed to replay it, or `nil`.
    static func run(seed: UInt64, steps: Int) async throws -> String? {
        var random = SplitMix(seed: seed)
        let server = RotatingServer()
        let sessions = SessionStore<AccountsApp>(store: InMemoryStore(), secrets: InMemorySecretStore())
        var stack = makeAccountsStack()
        // The model: who is signed in, and who is active.
        var signedIn: [String] = []
        var active: String?
        var log: [String] = []

        for _ in 0..<steps {
            let member = pool.randomElement(using: &random)!
            switch Int.random(in: 0..<100, using: &random) {
            case 0..<25:
                log.append("add \(member.id)")
                stack.addAccount(user: member, token: server.signIn(member))
                signedIn.removeAll { $0 == member.id }
                signedIn.append(member.id)
                active = member.id
            case 25..<45:
                log.append("switch \(member.id)")
                do {
                    try stack.switchAccount(to: member.id)
                    active = member.id
                } catch {
                    if signedIn.contains(member.id) { return "seed \(seed): switch to a signed-in account threw \(error); \(log)" }
                }
            case 45..<70:
                guard signedIn.contains(member.id) else { continue }
                let interference = Int.random(in: 0..<4, using: &random)
                let other = pool.randomElement(using: &random)!
                log.append("refresh \(member.id) (interference \(interference), \(other.id))")
                let outcome = await stack.refreshSession(account: member.id) { session in
                    switch interference {
                    case 0:
                        // The user switches accounts while the server answers.
                        if (try? stack.switchAccount(to: other.id)) != nil { active = other.id }
                    case 1:
                        // The account is signed out while the server answers.
                        stack.logout(account: member.id)
                        signedIn.removeAll { $0 == member.id }
                        if active == member.id { active = nil }
                    default:
                        break
                    }
                    return server.refresh(session.token).map { .refreshed(token: $0) } ?? .ended
                }
                if case .ended = outcome { return "seed \(seed): the server refused a token; \(log)" }
            case 70..<82:
                log.append("logout \(member.id)")
                stack.logout(account: member.id)
                server.signOut(member.id)
                signedIn.removeAll { $0 == member.id }
                if active == member.id { active = nil }
            case 82..<86:
                log.append("logout all")
                stack.logoutAll()
                signedIn = []
                active = nil
            default:
                log.append("relaunch")
                stack = makeAccountsStack()
                try stack.restore(from: sessions)
            }
            try stack.save(to: sessions)
            if let problem = check(stack.current, signedIn: signedIn, active: active) {
                return "seed \(seed): \(problem); \(log)"
            }
        }
        if !server.reusedTokens.isEmpty { return "seed \(seed): reused \(server.reusedTokens); \(log)" }
        let relaunched = makeAccountsStack()
        try relaunched.restore(from: sessions)
        if let problem = check(relaunched.current, signedIn: signedIn, active: active) { return "seed \(seed), last relaunch: \(problem); \(log)" }
        if relaunched.current.accounts.map(\.token) != stack.current.accounts.map(\.token) {
            return "seed \(seed): the relaunch restored other tokens; \(log)"
        }
        return nil
    }

    /// What is wrong with `environment` against the model, or `nil`.
    static func check(_ environment: HabitatEnvironment<AccountsApp>, signedIn: [String], active: String?) -> String? {
        if environment.activeAccountID != active { return "active \(environment.activeAccountID ?? "-"), expected \(active ?? "-")" }
        if Set(environment.accounts.map(\.user.id)) != Set(signedIn) {
            return "signed in \(environment.accounts.map(\.user.id)), expected \(signedIn)"
        }
        if environment.accounts.count != signedIn.count { return "an account twice: \(environment.accounts.map(\.user.id))" }
        for session in environment.accounts where owner(of: session.token) != session.user.id {
            return "\(session.user.id) holds \(session.token.secret)"
        }
        if environment.services.member != environment.session?.user || environment.services.token != environment.session?.token {
            return "the services hold \(environment.services.member?.id ?? "-") with \(environment.services.token?.secret ?? "-")"
        }
        return nil
    }
}
