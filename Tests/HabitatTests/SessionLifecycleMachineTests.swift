import Foundation
@testable import Habitat
import Testing

/// The session's state machine, driven directly: no stack, no files, no clock. One test per row
/// of the table in `SessionLifecycle.swift`.
@Suite struct SessionLifecycleMachineTests {
    typealias Machine = SessionLifecycle<TestUser>
    let token = AuthToken("t1")
    let rotated = AuthToken("t2")
    var signedIn: UserSession<TestUser> { UserSession(user: .ada, token: token, state: .authenticated) }
    var restored: UserSession<TestUser> { UserSession(user: .ada, token: token, state: .restored) }
    var awaiting: UserSession<TestUser> { UserSession(user: .ada, token: AuthToken(""), state: .awaitingToken) }
    var states: [UserSession<TestUser>?] { [nil, signedIn, restored, awaiting] }

    @Test func loginFromAnyStateSignsInAndSaves() {
        for state in states {
            let transition = Machine.transition(from: state, on: .login(.grace, rotated))
            #expect(transition.outcome == .applied)
            #expect(transition.session == UserSession(user: .grace, token: rotated, state: .authenticated))
            #expect(transition.saves)
        }
    }

    @Test func logoutEndsEverySessionAndSavesAndIsNothingWhenSignedOut() {
        for state in [signedIn, restored, awaiting] {
            let transition = Machine.transition(from: state, on: .logout)
            #expect(transition.outcome == .applied)
            #expect(transition.session == nil)
            #expect(transition.saves, "a logout is saved: the token is deleted first")
        }
        let none = Machine.transition(from: nil, on: .logout)
        #expect(none.outcome == .unchanged)
        #expect(!none.saves)
    }

    @Test func updatingTheUserKeepsTheTokenAndStateAndNeedsASession() {
        for state in [signedIn, restored, awaiting] {
            let transition = Machine.transition(from: state, on: .updateUser(TestUser(id: 1, name: "Ada L.")))
            #expect(transition.outcome == .applied)
            #expect(transition.session?.user.name == "Ada L.")
            #expect(transition.session?.token == state.token)
            #expect(transition.session?.state == state.state)
        }
        let refused = Machine.transition(from: nil, on: .updateUser(.ada))
        #expect(refused.outcome == .refused(.notLoggedIn(operation: "updateCurrentUser")))
        #expect(refused.session == nil)
    }

    @Test func aRestoreTakesWhatTheStoreHoldsWithoutSaving() {
        for stored in states {
            let transition = Machine.transition(from: signedIn, on: .restored(stored, others: []))
            #expect(transition.outcome == .applied)
            #expect(transition.session == stored)
            #expect(!transition.saves, "never written back: it is what the store holds")
        }
    }

    @Test func aReadableTokenSettlesOnlyAnAwaitingSession() {
        let settled = Machine.transition(from: awaiting, on: .tokenReadable(restored, others: []))
        #expect(settled.outcome == .applied)
        #expect(settled.session == restored)
        let gone = Machine.transition(from: awaiting, on: .tokenReadable(nil, others: []))
        #expect(gone.outcome == .applied)
        #expect(gone.session == nil)
        for state in [nil, signedIn, restored] {
            let transition = Machine.transition(from: state, on: .tokenReadable(nil, others: []))
            #expect(transition.outcome == .unchanged, "nothing was waiting")
            #expect(transition.session == state)
        }
    }

    @Test func aRefreshAppliesToItsOwnSessionOnly() {
        for state in [signedIn, restored] {
            let transition = Machine.transition(from: state, on: .refreshed(from: token, to: rotated, user: nil))
            #expect(transition.outcome == .applied)
            #expect(transition.session == UserSession(user: .ada, token: rotated, state: .authenticated))
            #expect(transition.saves)
        }
        let renamed = Machine.transition(from: restored, on: .refreshed(from: token, to: rotated, user: .grace))
        #expect(renamed.session?.user == .grace, "the server may send the user anew")
        let sameToken = Machine.transition(from: restored, on: .refreshed(from: token, to: token, user: nil))
        #expect(sameToken.outcome == .applied, "a refresh that keeps the token still confirms the session")
        #expect(sameToken.session?.state == .authenticated)
        let joined = Machine.transition(from: UserSession(user: .ada, token: rotated, state: .authenticated), on: .refreshed(from: token, to: rotated, user: nil))
        #expect(joined.outcome == .unchanged, "another caller applied it")
        for state: UserSession<TestUser>? in [nil, awaiting, UserSession(user: TestUser.grace, token: AuthToken("other"), state: .authenticated)] {
            let transition = Machine.transition(from: state, on: .refreshed(from: token, to: rotated, user: nil))
            #expect(transition.outcome == .superseded)
            #expect(transition.session == state)
            #expect(!transition.saves)
        }
    }

    @Test func aSessionTheServerEndedSignsOutOnlyItself() {
        let ended = Machine.transition(from: restored, on: .refreshEnded(from: token))
        #expect(ended.outcome == .applied)
        #expect(ended.session == nil)
        #expect(ended.saves)
        #expect(Machine.transition(from: nil, on: .refreshEnded(from: token)).outcome == .unchanged)
        let other = UserSession(user: TestUser.grace, token: AuthToken("other"), state: .authenticated)
        #expect(Machine.transition(from: other, on: .refreshEnded(from: token)).outcome == .superseded)
    }

    @Test func aChangeFromTheStoreReplacesOnlyTheSessionItWasAbout() {
        let taken = Machine.transition(from: restored, on: .storeChanged(nil, others: [], replacing: token.secret))
        #expect(taken.outcome == .applied)
        #expect(taken.session == nil)
        #expect(!taken.saves, "it is what the store holds")
        let signedInElsewhere = Machine.transition(from: nil, on: .storeChanged(signedIn, others: [], replacing: nil))
        #expect(signedInElsewhere.session == signedIn)
        let changedHere = Machine.transition(from: UserSession(user: .grace, token: rotated, state: .authenticated), on: .storeChanged(nil, others: [], replacing: token.secret))
        #expect(changedHere.outcome == .superseded, "a change made here since wins")
    }
}

/// The several-accounts rows of the table, driven directly: the other accounts are changed in
/// place, and only by an applied transition.
@Suite struct AccountLifecycleMachineTests {
    typealias Machine = SessionLifecycle<Member>
    let ada = UserSession(user: Member.ada, token: memberToken(.ada, 1), state: .restored)
    let grace = UserSession(user: Member.grace, token: memberToken(.grace, 2), state: .authenticated)
    let alan = UserSession(user: Member.alan, token: memberToken(.alan, 3), state: .restored)

    func run(_ session: UserSession<Member>?, _ others: [UserSession<Member>], _ event: Machine.Event)
        -> (Machine.Transition, [UserSession<Member>]) {
        var others = others
        let transition = Machine.transition(
            from: session, others: &others, on: event,
            accountID: AccountsApp.accountID(of:), isNamed: AccountsApp.isAccount(_:named:)
        )
        return (transition, others)
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
