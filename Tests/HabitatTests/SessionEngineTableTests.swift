import Foundation
@testable import Habitat
import Testing

/// The Session engine article's table, checked against the machine: every cell (the active
/// account's state x an event) is what `SessionMachine` does, publishes and saves. A change to
/// the machine that the article doesn't show fails here, with the row as it should read.
@Suite struct SessionEngineTableTests {
    typealias Machine = SessionMachine<AccountsApp>
    typealias Session = UserSession<Member>

    static let states: [(name: String, session: Session?)] = [
        ("signed out", nil),
        ("signed in", Session(user: .ada, token: AuthToken("ada#1"), state: .authenticated)),
        ("restored", Session(user: .ada, token: AuthToken("ada#1"), state: .restored)),
        ("awaiting token", Session(user: .ada, token: AuthToken(""), state: .awaitingToken)),
    ]
    static let grace = Session(user: .grace, token: AuthToken("grace#2"), state: .authenticated)

    /// The table's events, as the article names them, with the values each cell runs.
    static var events: [(name: String, event: Machine.Event)] { [
        ("`login` (Alan)", .login(.alan, AuthToken("alan#3"))),
        ("`addAccount` (Alan)", .addAccount(.alan, AuthToken("alan#3"))),
        ("`switchAccount` (Grace)", .switchAccount("grace")),
        ("`switchAccount` (Ada)", .switchAccount("ada")),
        ("`switchAccount` (unknown)", .switchAccount("nobody")),
        ("`logout`", .logout),
        ("`logout(account:)` (Ada)", .logoutAccount("ada")),
        ("`logout(account:)` (Grace)", .logoutAccount("grace")),
        ("`logoutAll`", .logoutAll),
        ("`updateCurrentUser`", .updateUser { $0.name = "Ada L." }),
        ("`updateConfig`", .updateConfig { _ in }),
        ("restored (Ada, restored)", .restored(StoredAccounts(active: Session(user: .ada, token: AuthToken("ada#1"), state: .restored), others: [grace]), config: NoConfig())),
        ("token readable (found)", .tokenReadable(Session(user: .ada, token: AuthToken("ada#1"), state: .restored), others: [grace])),
        ("token readable (gone)", .tokenReadable(nil, others: [grace])),
        ("refreshed (Ada's token)", .refreshed(from: AuthToken("ada#1"), to: AuthToken("ada#9"), user: nil)),
        ("refresh ended (Ada's token)", .refreshEnded(from: AuthToken("ada#1"))),
        ("refresh ended (Grace's token)", .refreshEnded(from: AuthToken("grace#2"))),
        ("store changed (replacing Ada's token)", .storeChanged(Session(user: .ada, token: AuthToken("ada#5"), state: .restored), others: [], replacing: "ada#1")),
        ("window followed (showing nobody)", .followed(nil, others: [grace], config: NoConfig(), cause: .logout)),
    ] }

    /// What the machine does with `event` from `state`, as the article's cell says it.
    static func cell(_ state: Session?, _ event: Machine.Event) -> String {
        var environment = HabitatEnvironment<AccountsApp>(services: MemberServices(), session: state)
        environment.otherAccounts = [grace]
        let kind = Machine.publishes(event, in: environment)
        switch Machine.transition(event, &environment) {
        case .applied:
            let who = environment.session.map { "\($0.user.name), \(name(of: $0.state))" } ?? "signed out"
            return "\(who) · `.\(kind)` · \(Machine.row(event).saves ? "saved" : "not saved")"
        case .unchanged: return "unchanged"
        case .superseded: return "dropped"
        case .refused: return "refused"
        }
    }

    static func name(of state: AuthState) -> String {
        switch state {
        case .authenticated: "signed in"
        case .restored: "restored"
        case .awaitingToken: "awaiting token"
        }
    }

    /// The table, as the article should show it.
    static var table: [String] {
        ["| Event | " + states.map(\.name).joined(separator: " | ") + " |",
         "|---" + String(repeating: "|---", count: states.count) + "|"]
            + events.map { event in "| \(event.name) | " + states.map { cell($0.session, event.event) }.joined(separator: " | ") + " |" }
    }

    /// A sign-in in a window whose follower took the new account first, as another one, before
    /// the window's own call showed it: still the window's sign-in, not a switch (a race seen
    /// under the thread sanitizer: `WindowEnvironmentTests/aSignInInAWindow…`). A switch the app
    /// makes stays a switch.
    @Test func aWindowsSignInIsALoginEvenWhenItsFollowerTookTheAccountFirst() {
        var window = HabitatEnvironment<AccountsApp>(services: MemberServices(), session: Self.grace)
        let alan = Session(user: .alan, token: AuthToken("alan#3"), state: .authenticated)
        window.otherAccounts = [alan]
        #expect(Machine.publishes(.followed(alan, others: [Self.grace], config: NoConfig(), cause: .login), in: window) == .login)
        #expect(Machine.publishes(.followed(alan, others: [Self.grace], config: NoConfig(), cause: .accountSwitched), in: window) == .accountSwitched)
    }

    @Test func theArticlesTableIsWhatTheMachineDoes() throws {
        let article = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../Sources/Habitat/Habitat.docc/Articles/SessionEngine.md").standardized
        let text = try String(contentsOf: article, encoding: .utf8)
        let lines = text.components(separatedBy: "\n").filter { $0.hasPrefix("| ") || $0.hasPrefix("|---") }
        let shown = lines.drop { !$0.hasPrefix("| Event |") }.prefix(Self.table.count)
        #expect(Array(shown) == Self.table, "the article's table should read:\n\(Self.table.joined(separator: "\n"))")
        #expect(Self.events.count * Self.states.count == 76)
    }
}
