import Foundation
@testable import Habitat
import HabitatPersistence
import Testing

/// A window per account: each window's stack shows an account of its own among the app's
/// signed-in ones, switches alone, and sees every sign-in, sign-out and refresh made on the app.
@Suite struct WindowEnvironmentTests {
    /// The app's stack with Ada (active) and Grace signed in.
    private func appWithTwoAccounts() -> EnvironmentStack<AccountsApp> {
        let app = makeAccountsStack()
        app.login(user: .grace, token: memberToken(.grace, 2))
        app.addAccount(user: .ada, token: memberToken(.ada, 1))
        return app
    }

    /// The kinds of the changes `changes` publishes, up to the first of `last`.
    private func kinds(_ changes: AsyncStream<EnvironmentChange<AccountsApp>>, through last: EnvironmentChangeKind) async -> [EnvironmentChangeKind] {
        var kinds: [EnvironmentChangeKind] = []
        for await change in changes {
            kinds.append(change.kind)
            if change.kind == last { break }
        }
        return kinds
    }

    @Test func aWindowShowsTheAccountItIsGivenOrTheAppsActiveOne() {
        let app = appWithTwoAccounts()
        let named = WindowEnvironment(following: app, showing: "grace")
        let unnamed = WindowEnvironment(following: app)
        let gone = WindowEnvironment(following: app, showing: "alan")
        #expect(named.accountID == "grace" && named.stack.current.session?.user == .grace)
        #expect(named.stack.current.otherAccounts.map(\.user) == [.ada])
        #expect(named.stack.current.services.member == .grace, "its services are told of its account")
        #expect(unnamed.accountID == "ada" && unnamed.stack.current.session?.user == .ada)
        #expect(gone.accountID == "ada", "an account no longer signed in: the app's active one")
    }

    @Test func twoWindowsSwitchingAThousandTimesNeverReadTheOthersAccount() async throws {
        let app = appWithTwoAccounts()
        let windows = [WindowEnvironment(following: app, showing: "ada"), WindowEnvironment(following: app, showing: "grace")]
        let wrongReads = try await withThrowingTaskGroup(of: Int.self) { group in
            for (index, window) in windows.enumerated() {
                group.addTask {
                    var wrong = 0
                    for step in 0..<1_000 {
                        // Each window alternates, the two in opposite phase: at every step they
                        // show different accounts.
                        let name = (step + index).isMultiple(of: 2) ? "grace" : "ada"
                        try window.switchAccount(to: name)
                        let session = window.stack.current.session
                        if session?.user.id != name || window.stack.current.services.member?.id != name { wrong += 1 }
                        if session.map({ owner(of: $0.token) }) != name { wrong += 1 }
                    }
                    return wrong
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(wrongReads == 0)
        #expect(app.current.session?.user == .ada, "no window's switch changed the app")
    }

    @Test func aSwitchChangesNoOtherWindowAndAnUnknownAccountIsRefused() throws {
        let app = appWithTwoAccounts()
        let first = WindowEnvironment(following: app, showing: "ada")
        let second = WindowEnvironment(following: app, showing: "ada")
        try first.switchAccount(to: "grace")
        #expect(first.stack.current.session?.user == .grace && first.stack.frames.last?.origin.operation == .accountSwitched)
        #expect(second.stack.current.session?.user == .ada)
        #expect(throws: SessionError.unknownAccount("alan", operation: "switchAccount")) { try first.switchAccount(to: "alan") }
        #expect(first.accountID == "grace")
    }

    @Test func aSignOutInOneWindowReachesEveryOther() async throws {
        let app = appWithTwoAccounts()
        let signingOut = WindowEnvironment(following: app, showing: "ada")
        let alsoAda = WindowEnvironment(following: app, showing: "ada")
        let grace = WindowEnvironment(following: app, showing: "grace")
        let adaChanges = alsoAda.stack.changes
        let graceChanges = grace.stack.changes
        let ownChanges = signingOut.stack.changes
        #expect(signingOut.logout()?.user == .ada)
        #expect(signingOut.accountID == nil && signingOut.stack.current.session == nil)
        #expect(app.current.accounts.map(\.user) == [.grace], "signed out of the app")
        try await eventually { alsoAda.stack.current.session == nil && grace.stack.current.otherAccounts.isEmpty }
        #expect(alsoAda.accountID == nil && alsoAda.stack.current.services.token == nil)
        #expect(grace.stack.current.session?.user == .grace, "Grace's window keeps Grace")
        #expect(await adaChanges.first { _ in true }?.kind == .logout)
        #expect(await graceChanges.first { _ in true }?.kind == .accountSignedOut)
        // The window's own sign-out is one change: its follower, seeing the app's change after
        // the window applied it, adds none (the other order: the test below).
        app.updateConfig { _ in }
        #expect(await kinds(ownChanges, through: .configUpdated) == [.logout, .configUpdated])
    }

    /// The order the thread sanitizer's run found: the window's follower applies the app's
    /// sign-out before the window's own call does. The window's stack publishes one change, not
    /// a second where nothing moved.
    @Test func aWindowsOwnChangeThatItsFollowerTookFirstPublishesNothingMore() async throws {
        let app = appWithTwoAccounts()
        let window = WindowEnvironment(following: app, showing: "ada")
        let changes = window.stack.changes
        app.logout(account: "ada")   // what the window's logout does first
        try await eventually { window.stack.current.session == nil }   // its follower took it
        window.followApp(cause: .logout, fileID: #fileID, line: #line)   // then the window's own call
        app.updateConfig { _ in }
        #expect(await kinds(changes, through: .configUpdated) == [.logout, .configUpdated])
        #expect(window.accountID == nil)
    }

    @Test func aSignInInAWindowShowsItThereAndJoinsTheOthersElsewhere() async throws {
        let app = appWithTwoAccounts()
        let window = WindowEnvironment(following: app, showing: "grace")
        let other = WindowEnvironment(following: app, showing: "ada")
        window.login(user: .alan, token: memberToken(.alan, 3))
        #expect(window.accountID == "alan" && window.stack.current.session?.user == .alan)
        #expect(window.stack.frames.last?.origin.operation == .login)
        #expect(Set(app.current.accounts.map(\.user.id)) == ["ada", "grace", "alan"])
        try await eventually { other.stack.current.otherAccounts.count == 2 }
        #expect(other.stack.current.session?.user == .ada)
    }

    @Test func aRefreshAndAConfigurationChangeOnTheAppReachTheWindow() async throws {
        let app = appWithTwoAccounts()
        let window = WindowEnvironment(following: app, showing: "grace")
        let changes = window.stack.changes
        let outcome = await app.refreshSession(account: "grace") { _ in .refreshed(token: memberToken(.grace, 9)) }
        #expect(outcome == .refreshed)
        try await eventually { window.stack.current.session?.token == memberToken(.grace, 9) }
        #expect(window.stack.current.services.token == memberToken(.grace, 9))
        #expect(await changes.first { _ in true }?.kind == .refresh)
    }

    @Test func aWindowsPushedFramesStayInTheWindow() throws {
        let app = appWithTwoAccounts()
        let window = WindowEnvironment(following: app, showing: "grace")
        window.stack.push(label: "draft") { $0.services.member = Member(id: "draft", name: "Draft") }
        #expect(window.stack.depth == 2 && app.depth == 1)
        #expect(app.current.services.member == .ada)
        #expect(window.stack.pop()?.services.member?.id == "draft")
        #expect(window.stack.current.services.member == .grace)
    }

    @Test func eachWindowsAccountIsRestoredAfterARelaunch() throws {
        let sessions = SessionStore<AccountsApp>.inMemory()
        let app = appWithTwoAccounts()
        try sessions.save(app.current)
        let kept = [WindowEnvironment(following: app, showing: "grace").accountID, WindowEnvironment(following: app, showing: "ada").accountID]

        let relaunched = makeAccountsStack()
        guard case .restored = relaunched.restoreAtLaunch(from: sessions) else { throw CancellationError() }
        let windows = kept.map { WindowEnvironment(following: relaunched, showing: $0) }
        #expect(windows.map { $0.stack.current.session?.user } == [.grace, .ada])
        #expect(windows.map { $0.stack.current.session.map { owner(of: $0.token) } } == ["grace", "ada"])
    }

    @Test func aClosedOrReleasedWindowFollowsNoMore() async throws {
        let app = appWithTwoAccounts()
        let closed = WindowEnvironment(following: app, showing: "grace")
        closed.close()
        weak var released: WindowEnvironment<AccountsApp>?
        do {
            let window = WindowEnvironment(following: app, showing: "ada")
            released = window
            #expect(released != nil)
        }
        #expect(released == nil, "its follower doesn't keep it alive")
        app.logout(account: "grace")
        let open = WindowEnvironment(following: app)
        app.logoutAll()
        try await eventually { open.stack.current.accounts.isEmpty }
        #expect(closed.stack.current.session?.user == .grace, "a closed window keeps what it held")
    }
}
