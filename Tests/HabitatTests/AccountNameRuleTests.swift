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

/// A user told apart by a `UUID`.
private struct Device: Codable, Sendable, Hashable, Identifiable {
    var id: UUID
}

private enum DevicesApp: EnvironmentSchema {
    typealias Services = Int
    typealias User = Device
}

/// A user whose id is neither text nor a number, but prints as text.
private struct Badge: Codable, Sendable, Hashable, CustomStringConvertible {
    var number: Int
    var description: String { "badge-\(number)" }
}

private struct Holder: Codable, Sendable, Hashable, Identifiable {
    var id: Badge
}

private enum HoldersApp: EnvironmentSchema {
    typealias Services = Int
    typealias User = Holder
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

    /// An `Int` id is named by its description exactly, on the edge cases of the number form.
    @Test(arguments: [0, 7, -7, 10, 100, -100, Int.max, Int.min])
    func anIntIDIsNamedExactlyByItsDescription(_ id: Int) {
        let user = Agent(id: id)
        #expect(AgentsApp.isAccount(user, named: id.description))
        for other in ["+\(id)", "0\(id)", "-0", "00", "\(id)0", " \(id)", "-\(id)"] where other != id.description {
            #expect(AgentsApp.isAccount(user, named: other) == (other == AgentsApp.accountID(of: user)), "\(other)")
        }
    }

    @Test func aUUIDIsNamedByItsUUIDStringAndAnyOtherIDByItsText() throws {
        let uuid = try #require(UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F"))
        #expect(DevicesApp.accountID(of: Device(id: uuid)) == "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")
        let devices = EnvironmentStack<DevicesApp>(HabitatEnvironment(services: 0))
        devices.login(user: Device(id: uuid), token: AuthToken("first"))
        devices.addAccount(user: Device(id: UUID()), token: AuthToken("second"))
        #expect(throws: SessionError.self, "exactly: the lowercase form is another name") {
            try devices.switchAccount(to: uuid.uuidString.lowercased())
        }
        try devices.switchAccount(to: uuid.uuidString)
        #expect(devices.current.session?.token.secret == "first")

        #expect(HoldersApp.accountID(of: Holder(id: Badge(number: 3))) == "badge-3")
        let holders = EnvironmentStack<HoldersApp>(HabitatEnvironment(services: 0))
        holders.login(user: Holder(id: Badge(number: 3)), token: AuthToken("three"))
        holders.addAccount(user: Holder(id: Badge(number: 4)), token: AuthToken("four"))
        try holders.switchAccount(to: "badge-3")
        #expect(holders.current.session?.token.secret == "three")
        #expect(holders.logout(account: "badge-4")?.token.secret == "four")
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
