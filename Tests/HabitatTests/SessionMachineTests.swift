import Foundation
@testable import Habitat
@testable import HabitatPersistence
import Testing

/// A step of the machine, as the tests read it: the outcome, the active session after it, the
/// other accounts after it, and whether the stack would save.
struct MachineStep<App: EnvironmentSchema> {
    var outcome: SessionMachine<App>.Outcome
    var session: UserSession<App.User>?
    var others: [UserSession<App.User>]
    var saves: Bool
    /// The change it publishes when it applies.
    var publishes: EnvironmentChangeKind
}

extension SessionMachine where App.Config: DefaultConfig {
    /// Runs `event` from `session` and `others` on a bare environment value made with
    /// `services`: no stack, no I/O.
    static func step(
        from session: UserSession<App.User>?, others: [UserSession<App.User>] = [], on event: Event, services: App.Services
    ) -> MachineStep<App> {
        var environment = HabitatEnvironment<App>(services: services, session: session)
        environment.otherAccounts = others
        let kind = publishes(event, in: environment)
        let outcome = transition(event, &environment)
        return MachineStep(
            outcome: outcome, session: environment.session, others: environment.otherAccounts,
            saves: outcome.isApplied && row(event).saves, publishes: kind
        )
    }
}

extension SessionMachine where App == TestApp {
    static func step(from session: UserSession<TestUser>?, on event: Event) -> MachineStep<App> {
        step(from: session, on: event, services: TestServices())
    }
}

extension SessionMachine where App == AccountsApp {
    static func step(from session: UserSession<Member>?, others: [UserSession<Member>], on event: Event) -> MachineStep<App> {
        step(from: session, others: others, on: event, services: MemberServices())
    }
}

extension SessionMachine.Event where App.Config: DefaultConfig {
    static func updateUser(to user: App.User) -> Self { .updateUser { $0 = user } }
    static func restored(_ session: UserSession<App.User>?, others: [UserSession<App.User>]) -> Self {
        .restored(StoredAccounts(active: session, others: others), config: App.Config())
    }
}

/// The session's state machine, driven directly: no stack, no files, no clock. One test per row
/// of the table in `SessionMachine.swift`.
@Suite struct SessionMachineTests {
    typealias Machine = SessionMachine<TestApp>
    let token = AuthToken("t1")
    let rotated = AuthToken("t2")
    var signedIn: UserSession<TestUser> { UserSession(user: .ada, token: token, state: .authenticated) }
    var restored: UserSession<TestUser> { UserSession(user: .ada, token: token, state: .restored) }
    var awaiting: UserSession<TestUser> { UserSession(user: .ada, token: AuthToken(""), state: .awaitingToken) }
    var states: [UserSession<TestUser>?] { [nil, signedIn, restored, awaiting] }

    @Test func loginFromAnyStateSignsInAndSaves() {
        for state in states {
            let transition = Machine.step(from: state, on: .login(.grace, rotated))
            #expect(transition.outcome == .applied)
            #expect(transition.session == UserSession(user: .grace, token: rotated, state: .authenticated))
            #expect(transition.saves)
        }
    }

    @Test func logoutEndsEverySessionAndSavesAndIsNothingWhenSignedOut() {
        for state in [signedIn, restored, awaiting] {
            let transition = Machine.step(from: state, on: .logout)
            #expect(transition.outcome == .applied)
            #expect(transition.session == nil)
            #expect(transition.saves, "a logout is saved: the token is deleted first")
        }
        let none = Machine.step(from: nil, on: .logout)
        #expect(none.outcome == .unchanged)
        #expect(!none.saves)
    }

    @Test func updatingTheUserKeepsTheTokenAndStateAndNeedsASession() {
        for state in [signedIn, restored, awaiting] {
            let transition = Machine.step(from: state, on: .updateUser(to: TestUser(id: 1, name: "Ada L.")))
            #expect(transition.outcome == .applied)
            #expect(transition.session?.user.name == "Ada L.")
            #expect(transition.session?.token == state.token)
            #expect(transition.session?.state == state.state)
        }
        let refused = Machine.step(from: nil, on: .updateUser(to: .ada))
        #expect(refused.outcome == .refused(.notLoggedIn(operation: "updateCurrentUser")))
        #expect(refused.session == nil)
    }

    @Test func aRestoreTakesWhatTheStoreHoldsWithoutSaving() {
        for stored in states {
            let transition = Machine.step(from: signedIn, on: .restored(stored, others: []))
            #expect(transition.outcome == .applied)
            #expect(transition.session == stored)
            #expect(!transition.saves, "never written back: it is what the store holds")
        }
    }

    @Test func aReadableTokenSettlesOnlyAnAwaitingSession() {
        let settled = Machine.step(from: awaiting, on: .tokenReadable(restored, others: []))
        #expect(settled.outcome == .applied)
        #expect(settled.session == restored)
        let gone = Machine.step(from: awaiting, on: .tokenReadable(nil, others: []))
        #expect(gone.outcome == .applied)
        #expect(gone.session == nil)
        for state in [nil, signedIn, restored] {
            let transition = Machine.step(from: state, on: .tokenReadable(nil, others: []))
            #expect(transition.outcome == .unchanged, "nothing was waiting")
            #expect(transition.session == state)
        }
    }

    @Test func aRefreshAppliesToItsOwnSessionOnly() {
        for state in [signedIn, restored] {
            let transition = Machine.step(from: state, on: .refreshed(from: token, to: rotated, user: nil))
            #expect(transition.outcome == .applied)
            #expect(transition.session == UserSession(user: .ada, token: rotated, state: .authenticated))
            #expect(transition.saves)
        }
        let renamed = Machine.step(from: restored, on: .refreshed(from: token, to: rotated, user: .grace))
        #expect(renamed.session?.user == .grace, "the server may send the user anew")
        let sameToken = Machine.step(from: restored, on: .refreshed(from: token, to: token, user: nil))
        #expect(sameToken.outcome == .applied, "a refresh that keeps the token still confirms the session")
        #expect(sameToken.session?.state == .authenticated)
        let joined = Machine.step(from: UserSession(user: .ada, token: rotated, state: .authenticated), on: .refreshed(from: token, to: rotated, user: nil))
        #expect(joined.outcome == .unchanged, "another caller applied it")
        for state: UserSession<TestUser>? in [nil, awaiting, UserSession(user: TestUser.grace, token: AuthToken("other"), state: .authenticated)] {
            let transition = Machine.step(from: state, on: .refreshed(from: token, to: rotated, user: nil))
            #expect(transition.outcome == .superseded)
            #expect(transition.session == state)
            #expect(!transition.saves)
        }
    }

    @Test func aSessionTheServerEndedSignsOutOnlyItself() {
        let ended = Machine.step(from: restored, on: .refreshEnded(from: token))
        #expect(ended.outcome == .applied)
        #expect(ended.session == nil)
        #expect(ended.saves)
        #expect(Machine.step(from: nil, on: .refreshEnded(from: token)).outcome == .unchanged)
        let other = UserSession(user: TestUser.grace, token: AuthToken("other"), state: .authenticated)
        #expect(Machine.step(from: other, on: .refreshEnded(from: token)).outcome == .superseded)
    }

    @Test func aChangeFromTheStoreReplacesOnlyTheSessionItWasAbout() {
        let taken = Machine.step(from: restored, on: .storeChanged(nil, others: [], replacing: token.secret))
        #expect(taken.outcome == .applied)
        #expect(taken.session == nil)
        #expect(!taken.saves, "it is what the store holds")
        let signedInElsewhere = Machine.step(from: nil, on: .storeChanged(signedIn, others: [], replacing: nil))
        #expect(signedInElsewhere.session == signedIn)
        let changedHere = Machine.step(from: UserSession(user: .grace, token: rotated, state: .authenticated), on: .storeChanged(nil, others: [], replacing: token.secret))
        #expect(changedHere.outcome == .superseded, "a change made here since wins")
    }

    /// A stack's follower can see the stack's own save before the stack records that it made it:
    /// the store holds the stack's accounts, read back `restored`. Nothing to take: no change is
    /// published, and the stack's session stays `authenticated`.
    @Test func aChangeFromTheStoreThatHoldsWhatTheStackHoldsIsNoChange() {
        let own = UserSession(user: TestUser.ada, token: token, state: .authenticated)
        let readBack = UserSession(user: TestUser.ada, token: token, state: .restored)
        let seen = Machine.step(from: own, on: .storeChanged(readBack, others: [], replacing: token.secret))
        #expect(seen.outcome == .unchanged)
        #expect(seen.session?.state == .authenticated)
        #expect(Machine.step(from: nil, on: .storeChanged(nil, others: [], replacing: nil)).outcome == .unchanged, "signed out here and there")
        let renewed = UserSession(user: TestUser.ada, token: rotated, state: .restored)
        #expect(Machine.step(from: own, on: .storeChanged(renewed, others: [], replacing: token.secret)).outcome == .applied, "another token is a change")
    }
}

/// The several-accounts rows of the table, driven directly: the other accounts are changed in
/// place, and only by an applied transition.
@Suite struct AccountLifecycleMachineTests {
    typealias Machine = SessionMachine<AccountsApp>
    let ada = UserSession(user: Member.ada, token: memberToken(.ada, 1), state: .restored)
    let grace = UserSession(user: Member.grace, token: memberToken(.grace, 2), state: .authenticated)
    let alan = UserSession(user: Member.alan, token: memberToken(.alan, 3), state: .restored)

    func run(_ session: UserSession<Member>?, _ others: [UserSession<Member>], _ event: Machine.Event)
        -> (MachineStep<AccountsApp>, [UserSession<Member>]) {
        let step = Machine.step(from: session, others: others, on: event)
        return (step, step.others)
    }

    @Test func addAccountKeepsTheActiveOneBesideAndReplacesASameNamedOne() {
        let (added, others) = run(ada, [alan], .addAccount(.grace, memberToken(.grace, 9)))
        #expect(added.outcome == .applied && added.saves)
        #expect(added.session?.token == memberToken(.grace, 9))
        #expect(others.map(\.user) == [.alan, .ada])
        let (again, rest) = run(grace, [ada], .addAccount(.ada, memberToken(.ada, 7)))
        #expect(again.session?.token == memberToken(.ada, 7))
        #expect(rest.map(\.user) == [.grace], "the old ada is gone, grace waits")
    }

    @Test func switchSwapsInPlaceIsNothingForTheActiveOneAndRefusesAStranger() {
        let (switched, others) = run(ada, [grace, alan], .switchAccount("alan"))
        #expect(switched.outcome == .applied && switched.session == alan)
        #expect(others == [grace, ada], "ada takes alan's place, both keep their tokens and states")
        let (same, untouched) = run(ada, [grace], .switchAccount("ada"))
        #expect(same.outcome == .unchanged && untouched == [grace])
        let (refused, kept) = run(ada, [grace], .switchAccount("edsger"))
        #expect(refused.outcome == .refused(.unknownAccount("edsger", operation: "switchAccount")))
        #expect(refused.session == ada && kept == [grace])
        let (fromNobody, left) = run(nil, [grace, alan], .switchAccount("grace"))
        #expect(fromNobody.session == grace && left == [alan])
    }

    @Test func signingOutOneLeavesTheRestAndAllLeavesNothing() {
        let (active, others) = run(ada, [grace], .logoutAccount("ada"))
        #expect(active.session == nil && others == [grace])
        let (other, rest) = run(ada, [grace, alan], .logoutAccount("grace"))
        #expect(other.session == ada && rest == [alan])
        let (stranger, same) = run(ada, [grace], .logoutAccount("edsger"))
        #expect(stranger.outcome == .unchanged && same == [grace])
        let (all, none) = run(ada, [grace], .logoutAll)
        #expect(all.session == nil && none.isEmpty && all.saves)
        #expect(run(nil, [], .logoutAll).0.outcome == .unchanged)
    }

    @Test func refreshesFindTheirAccountWhereverItIsAndNeverTouchTheActiveOne() {
        let (renewed, others) = run(ada, [grace], .refreshed(from: grace.token, to: memberToken(.grace, 8), user: nil))
        #expect(renewed.outcome == .applied && renewed.session == ada)
        #expect(others.first?.token == memberToken(.grace, 8) && others.first?.state == .authenticated)
        let (gone, kept) = run(ada, [alan], .refreshed(from: grace.token, to: memberToken(.grace, 8), user: nil))
        #expect(gone.outcome == .superseded && kept == [alan], "grace was signed out meanwhile")
        let (ended, rest) = run(ada, [grace], .refreshEnded(from: grace.token))
        #expect(ended.session == ada && rest.isEmpty)
    }
}

/// The accounts are one session per account by construction: every way in keeps it so.
@Suite struct SignedInAccountsTests {
    let ada = UserSession(user: Member.ada, token: memberToken(.ada, 1))
    let grace = UserSession(user: Member.grace, token: memberToken(.grace, 2))
    let alan = UserSession(user: Member.alan, token: memberToken(.alan, 3))

    @Test func settingTheOthersKeepsTheFirstOfEachAccountAndNoneOfTheActiveOne() {
        var environment = HabitatEnvironment<AccountsApp>(services: MemberServices(), session: ada)
        let newerGrace = UserSession(user: Member.grace, token: memberToken(.grace, 9))
        environment.otherAccounts = [grace, ada, newerGrace, alan]
        #expect(environment.otherAccounts == [grace, alan])
        #expect(environment.accounts.map(\.user.id) == ["ada", "grace", "alan"])
    }

    @Test func theAccountsHeldAreTheSameAccountsWithTheSameTokensInOrderWhateverTheirState() {
        var environment = HabitatEnvironment<AccountsApp>(services: MemberServices(), session: ada)
        environment.otherAccounts = [grace, alan]
        let readBack = UserSession(user: Member.grace, token: grace.token, state: .restored)
        #expect(environment.holds(active: ada, others: [readBack, alan]))
        #expect(!environment.holds(active: ada, others: [alan, grace]), "another order")
        #expect(!environment.holds(active: ada, others: [grace]), "an account fewer")
        #expect(!environment.holds(active: ada, others: [UserSession(user: Member.grace, token: memberToken(.grace, 9)), alan]), "another token")
        #expect(!environment.holds(active: nil, others: [ada, grace, alan]), "none active")
    }

    @Test func settingTheActiveSessionSignsOutItsOtherSession() {
        var environment = HabitatEnvironment<AccountsApp>(services: MemberServices(), session: ada)
        environment.otherAccounts = [grace, alan]
        environment.session = UserSession(user: Member.grace, token: memberToken(.grace, 9))
        #expect(environment.otherAccounts == [alan], "grace once, active")
        environment.session = UserSession(user: .alan, token: memberToken(.alan, 9))
        #expect(environment.otherAccounts.isEmpty && environment.session?.token == memberToken(.alan, 9))
    }

    @Test func aRestoredSnapshotWithAnAccountTwiceRestoresItOnce() {
        var snapshot = SessionSnapshot<AccountsApp>(session: ada, config: NoConfig(), savedAt: nil)
        snapshot.otherAccounts = [grace, grace, ada]
        let stack = makeAccountsStack()
        stack.run(.restored(snapshot.accounts, config: snapshot.config), fileID: #fileID, line: #line)
        #expect(stack.current.accounts.map(\.user.id) == ["ada", "grace"])
    }

    @Test func theUsersNewNameReplacesTheAccountsOtherSession() throws {
        let stack = makeAccountsStack()
        stack.login(user: .ada, token: memberToken(.ada, 1))
        stack.addAccount(user: .grace, token: memberToken(.grace, 2))
        try stack.updateCurrentUser { $0.id = "ada" }
        #expect(stack.current.accounts.map(\.user.id) == ["ada"])
        #expect(stack.current.session?.token == memberToken(.grace, 2), "the active session, renamed, is the account's one session")
    }
}
