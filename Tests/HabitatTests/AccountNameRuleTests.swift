import Foundation
import Habitat
import HabitatPersistence
import Testing

/// A user told apart by an `Int` id, as in the report: accounts 7 and 8.
private struct Agent: Codable, Sendable, Hashable, Identifiable {
    var id: Int
}

private enum AgentsApp: EnvironmentSchema {
    typealias Services = Int
    typealias User = Agent
}

/// One rule says which account a name means, and switch, sign-out, refresh and the store obey
/// it alike: the name is exactly `accountID(of:)`. `"7"` names account 7; `"007"` and `"+7"`,
/// which read as the number 7, name no account.
@Suite struct AccountNameRuleTests {
    private func signedInSevenAndEight() -> EnvironmentStack<AgentsApp> {
        let stack = EnvironmentStack<AgentsApp>(HabitatEnvironment(services: 0))
        stack.login(user: Agent(id: 7), token: AuthToken("seven"))
        stack.addAccount(user: Agent(id: 8), token: AuthToken("eight"))
        return stack
    }

    @Test(arguments: ["007", "+7", "7.0", " 7", "", "07", "-7", "7 "])
    func aNameThatOnlyReadsAsTheIDNamesNoAccountAnywhere(_ name: String) async throws {
        let stack = signedInSevenAndEight()
        #expect(!AgentsApp.isAccount(Agent(id: 7), named: name))
        #expect(throws: SessionError.self) { try stack.switchAccount(to: name) }
        #expect(stack.logout(account: name) == nil)
        let outcome = await stack.refreshSession(account: name) { _ in .refreshed(token: AuthToken("rotated")) }
        #expect(outcome == .notLoggedIn)
        #expect(stack.current.accounts.map(\.user.id).sorted() == [7, 8], "nothing changed")
        #expect(stack.current.accounts.map(\.token.secret).sorted() == ["eight", "seven"])
    }

    /// The `Int` fast path against the text it stands for, on the edge cases of the number form.
    @Test(arguments: [0, 7, -7, 10, 100, -100, Int.max, Int.min])
    func anIntIDIsNamedExactlyByItsDescription(_ id: Int) {
        let user = Agent(id: id)
        #expect(AgentsApp.isAccount(user, named: id.description))
        for other in ["+\(id)", "0\(id)", "-0", "00", "\(id)0", " \(id)", "-\(id)"] where other != id.description {
            #expect(AgentsApp.isAccount(user, named: other) == (other == AgentsApp.accountID(of: user)), "\(other)")
        }
    }

    @Test func theExactNameNamesTheAccountEverywhere() async throws {
        let stack = signedInSevenAndEight()
        #expect(AgentsApp.isAccount(Agent(id: 7), named: "7"))
        #expect(AgentsApp.accountID(of: Agent(id: 7)) == "7")
        try stack.switchAccount(to: "7")
        #expect(stack.current.currentUser == Agent(id: 7))
        let outcome = await stack.refreshSession(account: "7") { _ in .refreshed(token: AuthToken("rotated")) }
        #expect(outcome == .refreshed)
        #expect(stack.current.session?.token.secret == "rotated")
        #expect(stack.logout(account: "7")?.user == Agent(id: 7))
        #expect(stack.current.accounts.map(\.user.id) == [8])
    }
}
