import Foundation
import Habitat
import HabitatPersistence
import HabitatTesting
import Observation
import Testing

@Suite struct AccountTransitionTests {
    @Test func addingAnAccountKeepsTheFirstSignedInAndMakesTheNewOneActive() {
        let stack = makeAccountsStack()
        stack.login(user: .ada, token: memberToken(.ada, 1))
        stack.addAccount(user: .grace, token: memberToken(.grace, 2))
        #expect(stack.current.session?.user == .grace)
        #expect(stack.current.otherAccounts.map(\.user) == [.ada])
        #expect(stack.current.otherAccounts.first?.token == memberToken(.ada, 1), "ada keeps her token")
        #expect(stack.current.services.member == .grace && stack.current.services.token == memberToken(.grace, 2))
        #expect(stack.current.accounts.map(\.user.id) == ["grace", "ada"])
        #expect(stack.current.activeAccountID == "grace")
    }

    @Test func aLoginReplacesOnlyTheActiveAccount() {
        let stack = makeAccountsStack()
        stack.login(user: .ada, token: memberToken(.ada, 1))
        stack.addAccount(user: .grace, token: memberToken(.grace, 2))
        stack.login(user: .alan, token: memberToken(.alan, 3))
        #expect(stack.current.accounts.map(\.user.id) == ["alan", "ada"], "grace was replaced, ada stays")
        stack.login(user: .ada, token: memberToken(.ada, 4))
        #expect(stack.current.accounts.map(\.user.id) == ["ada"], "signing ada in again leaves one ada")
        #expect(stack.current.session?.token == memberToken(.ada, 4))
    }

    @Test func switchingIsOneChangeAndTheServicesFollowInTheSameStep() async throws {
        let stack = makeAccountsStack()
        stack.login(user: .ada, token: memberToken(.ada, 1))
        stack.addAccount(user: .grace, token: memberToken(.grace, 2))
        let changes = stack.changes
        try stack.switchAccount(to: "ada")
        let change = try #require(await collect(1, from: changes).first)
        #expect(change.kind == .accountSwitched)
        #expect(change.old.session?.user == .grace && change.new.session?.user == .ada)
        #expect(change.new.services.member == .ada && change.new.services.token == memberToken(.ada, 1))
        #expect(change.new.otherAccounts.map(\.user) == [.grace])
        #expect(change.new.otherAccounts.first?.token == memberToken(.grace, 2))
    }

    @Test func switchingToAnUnknownAccountThrowsAndChangesNothing() {
        let stack = makeAccountsStack()
        stack.login(user: .ada, token: memberToken(.ada, 1))
        let before = stack.current.accounts
        #expect(throws: SessionError.unknownAccount("grace", operation: "switchAccount")) {
            try stack.switchAccount(to: "grace")
        }
        #expect(stack.current.accounts == before)
        #expect(SessionError.unknownAccount("grace", operation: "switchAccount").description == #"switchAccount: no signed-in account is named "grace""#)
    }

    @Test func switchingToTheActiveAccountPublishesNothing() throws {
        let stack = makeAccountsStack()
        stack.login(user: .ada, token: memberToken(.ada, 1))
        try stack.switchAccount(to: "ada")
        #expect(stack.frames.last?.origin.operation == .login, "no frame of a switch")
    }

    @Test func signingOutTheActiveAccountLeavesNobodyActiveAndTheOthersSignedIn() throws {
        let stack = makeAccountsStack()
        stack.login(user: .ada, token: memberToken(.ada, 1))
        stack.addAccount(user: .grace, token: memberToken(.grace, 2))
        let ended = stack.logout(account: "grace")
        #expect(ended?.user == .grace)
        #expect(stack.current.session == nil && stack.current.services.token == nil)
        #expect(stack.current.otherAccounts.map(\.user) == [.ada])
        #expect(stack.logout(account: "grace") == nil, "signed out already")
        try stack.switchAccount(to: "ada")
        #expect(stack.current.session?.user == .ada)
    }

    @Test func signingOutAnotherAccountLeavesTheActiveOneUntouched() {
        let stack = makeAccountsStack()
        stack.login(user: .ada, token: memberToken(.ada, 1))
        stack.addAccount(user: .grace, token: memberToken(.grace, 2))
        let session = stack.current.session
        #expect(stack.logout(account: "ada")?.user == .ada)
        #expect(stack.current.session == session && stack.current.otherAccounts.isEmpty)
    }

    /// `.logout` means "the screens' user is gone": published only when the active account's
    /// session ends; another account's sign-out or ended refresh is `.accountSignedOut`.
    @Test func onlyTheActiveAccountsEndIsALogout() async {
        let stack = makeAccountsStack()
        stack.login(user: .ada, token: memberToken(.ada, 1))
        stack.addAccount(user: .grace, token: memberToken(.grace, 2))
        stack.addAccount(user: .alan, token: memberToken(.alan, 3))
        let changes = stack.changes
        stack.logout(account: "ada")
        #expect(await stack.refreshSession(account: "grace") { _ in .ended } == .ended(expired: false))
        #expect(stack.current.session?.user == .alan, "the active account stays")
        stack.logout(account: "alan")
        stack.updateConfig { $0 = $0 }
        var kinds: [EnvironmentChangeKind] = []
        for await change in changes {
            if change.kind == .configUpdated { break }
            kinds.append(change.kind)
        }
        #expect(kinds == [.accountSignedOut, .accountSignedOut, .logout])
        #expect(stack.frames.last?.origin.operation == .configUpdated)
    }

    @Test func logoutAllEndsEveryAccountInOneStep() {
        let stack = makeAccountsStack()
        stack.login(user: .ada, token: memberToken(.ada, 1))
        stack.addAccount(user: .grace, token: memberToken(.grace, 2))
        #expect(stack.logoutAll().map(\.user.id) == ["grace", "ada"])
        #expect(stack.current.accounts.isEmpty)
        #expect(stack.logoutAll().isEmpty, "nothing left: no change")
    }

    @Test func aFrameSaysWhenTheOtherAccountsDiffer() {
        let stack = makeAccountsStack()
        stack.login(user: .ada, token: memberToken(.ada, 1))
        stack.addAccount(user: .grace, token: memberToken(.grace, 2))
        stack.push(label: "one account") { $0.otherAccounts = [] }
        #expect(stack.frames[0].changedFields == ["otherAccounts"])
    }

    @Test func readersNeverSeeOneAccountsUserWithAnothersToken() async throws {
        let stack = makeAccountsStack()
        stack.login(user: .ada, token: memberToken(.ada, 1))
        stack.addAccount(user: .grace, token: memberToken(.grace, 2))
        try await withThrowingTaskGroup(of: Int.self) { group in
            group.addTask {
                for index in 0..<2_000 { try stack.switchAccount(to: index.isMultiple(of: 2) ? "ada" : "grace") }
                return 0
            }
            for _ in 0..<2 {
                group.addTask {
                    var mixes = 0
                    for _ in 0..<20_000 {
                        let environment = stack.current
                        guard let session = environment.session else { continue }
                        if owner(of: session.token) != session.user.id || environment.services.member != session.user
                            || environment.services.token != session.token
                            || environment.otherAccounts.contains(where: { owner(of: $0.token) != $0.user.id }) {
                            mixes += 1
                        }
                    }
                    return mixes
                }
            }
            var mixes = 0
            for try await count in group { mixes += count }
            #expect(mixes == 0)
        }
    }
}

@Suite struct AccountRefreshTests {
    @Test func aBackgroundRefreshRenewsAnotherAccountAndNeverTheActiveOne() async throws {
        let stack = makeAccountsStack()
        let server = RotatingServer()
        stack.login(user: .ada, token: server.signIn(.ada))
        stack.addAccount(user: .grace, token: server.signIn(.grace))
        let active = stack.current.session
        let outcome = await stack.refreshSession(account: "ada") { session in
            .refreshed(token: server.refresh(session.token)!)
        }
        #expect(outcome == .refreshed)
        #expect(stack.current.session == active, "grace is untouched")
        let ada = try #require(stack.current.otherAccounts.first)
        #expect(ada.state == .authenticated && owner(of: ada.token) == "ada" && ada.token != memberToken(.ada, 1))
        #expect(stack.current.services.member == .grace)
        #expect(await stack.refreshSession(account: "alan") { _ in .ended } == .notLoggedIn)
    }

    @Test func aSwitchWhileTheServerAnswersGivesTheTokenToItsOwnAccount() async throws {
        let stack = makeAccountsStack()
        let server = RotatingServer()
        stack.login(user: .ada, token: server.signIn(.ada))
        stack.addAccount(user: .grace, token: server.signIn(.grace))
        let outcome = try await stack.refreshSession { session in
            try stack.switchAccount(to: "ada")   // the user switches while grace's refresh runs
            return .refreshed(token: server.refresh(session.token)!)
        }
        #expect(outcome == .refreshed)
        #expect(stack.current.session?.user == .ada && owner(of: stack.current.session!.token) == "ada")
        #expect(stack.current.otherAccounts.map { owner(of: $0.token) } == ["grace"])
        #expect(stack.current.otherAccounts.first?.state == .authenticated, "grace got her new token")
    }

    @Test func aRefreshOfAnAccountSignedOutMeanwhileIsDropped() async throws {
        let stack = makeAccountsStack()
        let server = RotatingServer()
        stack.login(user: .ada, token: server.signIn(.ada))
        stack.addAccount(user: .grace, token: server.signIn(.grace))
        let outcome = await stack.refreshSession(account: "ada") { session in
            stack.logout(account: "ada")
            return .refreshed(token: server.refresh(session.token)!)
        }
        #expect(outcome == .superseded)
        #expect(stack.current.accounts.map(\.user.id) == ["grace"], "ada stays signed out")
    }

    @Test func anEndedRefreshSignsOutOnlyItsAccount() async {
        let stack = makeAccountsStack()
        stack.login(user: .ada, token: memberToken(.ada, 1))
        stack.addAccount(user: .grace, token: memberToken(.grace, 2))
        #expect(await stack.refreshSession(account: "ada") { _ in .ended } == .ended(expired: false))
        #expect(stack.current.accounts.map(\.user.id) == ["grace"])
    }

    @Test func concurrentRefreshesOfOneAccountShareOneServerCall() async {
        let stack = makeAccountsStack()
        let server = RotatingServer()
        stack.login(user: .ada, token: server.signIn(.ada))
        stack.addAccount(user: .grace, token: server.signIn(.grace))
        let calls = Counter()
        let outcomes = await withTaskGroup(of: SessionRefreshOutcome.self) { group in
            for _ in 0..<20 {
                group.addTask {
                    await stack.refreshSession(account: "ada") { session in
                        calls.increment()
                        try? await Task.sleep(for: .milliseconds(20))
                        return server.refresh(session.token).map { .refreshed(token: $0) } ?? .ended
                    }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(calls.value == 1)
        #expect(outcomes.allSatisfy { $0 == .refreshed })
        #expect(server.reusedTokens.isEmpty)
    }
}


@Suite struct AccountObservationTests {
    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)  // ObservableEnvironment
    @Test @MainActor func anObserverSeesASwitchInOneStep() async throws {
        let stack = makeAccountsStack()
        stack.login(user: .ada, token: memberToken(.ada, 1))
        stack.addAccount(user: .grace, token: memberToken(.grace, 2))
        let object = ObservableEnvironment(stack)
        let (told, tell) = AsyncStream<Void>.makeStream()
        withObservationTracking { _ = object.session } onChange: { tell.yield() }
        try stack.switchAccount(to: "ada")
        for await _ in told { break }
        while object.session != stack.current.session { await Task.yield() }
        #expect(object.session?.user == .ada && object.session?.token == memberToken(.ada, 1))
        #expect(object.otherAccounts.map(\.user) == [.grace] && object.otherAccounts.first?.token == memberToken(.grace, 2))
    }
}
