// The session's life as one state machine: a pure value. The stack feeds it events and applies
// what it returns inside its atomic updates; the I/O (saving, the token's deletion, the server)
// stays outside, asked for by the actions.
//
// States, as a stack's top holds them (`HabitatEnvironment.session`):
//
//   signed out       nil
//   signed in        .authenticated   a login, or a refresh, during this launch
//   restored         .restored        read back at launch; the server hasn't confirmed it yet
//   awaiting token   .awaitingToken   read back without its token (a locked Keychain): nothing
//                                     is written until the token is read or known gone
//
// A refresh passes through states of its own, outcomes of the refresh events rather than
// values on the stack: refreshing (one flight per session: `RefreshFlights`), waiting for
// rotation (an extension that never refreshes waits for the app's token), and superseded (the
// session changed while the server answered: the answer is dropped).
//
// Transitions (event: from -> to, [actions]):
//
//   login(user, token)            any -> signed in                         [save]
//   logout                        signed in, restored, awaiting -> signed out   [save]
//                                 signed out -> (unchanged)
//   updateUser(user)              signed in, restored, awaiting -> same state, new user  [save]
//                                 signed out -> refused (notLoggedIn)
//   restored(session)             any -> the stored state: restored, awaiting token or
//                                 signed out (never saved: it is what the store holds)
//   tokenReadable(session)        awaiting token -> restored, or signed out   [save]
//                                 any other -> (unchanged: nothing was waiting)
//   refreshed(from: t, to: t')    signed in, restored with token t -> signed in with t'   [save]
//                                 with token t' already -> (unchanged: another caller applied it)
//                                 any other -> superseded
//   refreshEnded(from: t)         signed in, restored with token t -> signed out           [save]
//                                 signed out already -> (unchanged)
//                                 any other -> superseded
//   storeChanged(stored, t)       session with token t (or none, for nil) -> the stored one
//                                 (never saved: it is what the store holds)
//                                 any other -> superseded (a change made here since wins)
//
// Several accounts (`HabitatEnvironment.otherAccounts`, told apart by `accountID(of:)`):
//
//   login(user, token)            as above; an other account with the user's name is dropped
//   addAccount(user, token)       any -> signed in as user; the active account, if another,
//                                 joins the others                         [save]
//   switchAccount(name)           another's name -> that account active, the active one takes
//                                 its place among the others, each keeping its token and
//                                 state                                    [save]
//                                 the active's name -> (unchanged); unknown -> refused
//   logoutAccount(name)           the active's -> signed out, the others stay   [save]
//                                 an other's -> that one removed             [save]
//                                 unknown -> (unchanged)
//   logoutAll                     any -> signed out, no others             [save]
//   refreshed, refreshEnded       as above, on whichever account holds token t: renewing or
//                                 ending an other account never touches the active one
//   restored, tokenReadable, storeChanged  carry the others too
//
// Every committed transition is one change on the stack's feed (the "notify" action is the
// commit itself); `save` asks autosave to write, and a save of a signed-out state deletes the
// token first (SessionStore).

/// The session's life as one value: what each event does to the active session and the other
/// signed-in accounts, and what it asks for. See the table at the top of this file.
@usableFromInline
enum SessionLifecycle<User: Codable & Sendable> {
    /// What happened.
    @usableFromInline
    enum Event {
        case login(User, AuthToken)
        case addAccount(User, AuthToken)
        case switchAccount(String)
        case logout
        case logoutAccount(String)
        case logoutAll
        case updateUser(User)
        case restored(UserSession<User>?, others: [UserSession<User>])
        case tokenReadable(UserSession<User>?, others: [UserSession<User>])
        case refreshed(from: AuthToken, to: AuthToken, user: User?)
        case refreshEnded(from: AuthToken)
        case storeChanged(UserSession<User>?, others: [UserSession<User>], replacing: String?)
    }

    /// What a transition decided.
    @usableFromInline
    enum Outcome: Equatable {
        /// The session moved to the transition's `session`.
        case applied
        /// Nothing to do: the session is already what the event would make it.
        case unchanged
        /// The event was about a session the stack no longer holds: dropped.
        case superseded
        /// The event is not allowed in this state.
        case refused(SessionError)

        /// Whether the session moved.
        @inlinable
        var isApplied: Bool {
            if case .applied = self { return true }
            return false
        }
    }

    /// A transition: the session after it, and whether the stack should save it. (The other
    /// accounts after it are left in the `others` the transition was given.)
    @usableFromInline
    struct Transition {
        @usableFromInline var session: UserSession<User>?
        @usableFromInline var outcome: Outcome
        /// Whether autosave should write the new state (restores and changes taken from the
        /// store are what the store holds already).
        @usableFromInline var saves: Bool

        @inlinable
        init(session: UserSession<User>?, outcome: Outcome, saves: Bool) {
            self.session = session
            self.outcome = outcome
            self.saves = saves
        }

        @inlinable
        static func applied(_ session: UserSession<User>?, saves: Bool) -> Self {
            Transition(session: session, outcome: .applied, saves: saves)
        }

        @inlinable
        static func kept(_ session: UserSession<User>?, _ outcome: Outcome) -> Self {
            Transition(session: session, outcome: outcome, saves: false)
        }
    }

    /// The transition `event` makes from `session` and the `others` signed in beside it;
    /// `accountID` names an account (``EnvironmentSchema/accountID(of:)``) and `isNamed` tells
    /// whether a user is the account of a name (``EnvironmentSchema/isAccount(_:named:)``). `others` is changed
    /// in place, and only by a transition that is applied.
    ///
    /// NB: in place, so a switch moves two sessions within the array the stack handed over
    /// instead of building a new one.
    @inlinable
    static func transition(
        from session: UserSession<User>?,
        others: inout [UserSession<User>],
        on event: Event,
        accountID: (User) -> String,
        isNamed: (User, String) -> Bool
    ) -> Transition {
        switch event {
        case .login(let user, let token):
            // NB: one account, the common case, looks at nothing else.
            if !others.isEmpty {
                let name = accountID(user)
                others.removeAll { accountID($0.user) == name }
            }
            return .applied(UserSession(user: user, token: token, state: .authenticated), saves: true)
        case .addAccount(let user, let token):
            let name = accountID(user)
            others.removeAll { accountID($0.user) == name }
            if let current = session, accountID(current.user) != name { others.append(current) }
            return .applied(UserSession(user: user, token: token, state: .authenticated), saves: true)
        case .switchAccount(let name):
            // NB: the others first: a switch's common case looks at the active account not at all.
            guard let index = others.firstIndex(where: { isNamed($0.user, name) }) else {
                if let current = session, isNamed(current.user, name) { return .kept(session, .unchanged) }
                return .kept(session, .refused(.unknownAccount(name, operation: "switchAccount")))
            }
            // The account that was active takes the place of the one that becomes active.
            guard let current = session else { return .applied(others.remove(at: index), saves: true) }
            // NB: copied field by field: a plain copy of a generic session goes through its value
            // witness (see `HabitatEnvironment.fieldwiseCopy`): 80 instructions more per switch.
            var target = UserSession(user: current.user, token: current.token, state: current.state)
            swap(&target, &others[index])
            return .applied(target, saves: true)
        case .logout:
            return session == nil ? .kept(nil, .unchanged) : .applied(nil, saves: true)
        case .logoutAccount(let name):
            if let current = session, isNamed(current.user, name) { return .applied(nil, saves: true) }
            guard let index = others.firstIndex(where: { isNamed($0.user, name) }) else { return .kept(session, .unchanged) }
            others.remove(at: index)
            return .applied(session, saves: true)
        case .logoutAll:
            guard session != nil || !others.isEmpty else { return .kept(nil, .unchanged) }
            others = []
            return .applied(nil, saves: true)
        case .updateUser(let user):
            guard var updated = session else {
                return .kept(session, .refused(.notLoggedIn(operation: "updateCurrentUser")))
            }
            updated.user = user
            return .applied(updated, saves: true)
        case .restored(let stored, let storedOthers):
            others = storedOthers
            return .applied(stored, saves: false)
        case .tokenReadable(let stored, let storedOthers):
            guard session?.state == .awaitingToken || others.contains(where: { $0.state == .awaitingToken }) else {
                return .kept(session, .unchanged)
            }
            others = storedOthers
            return .applied(stored, saves: true)
        case .refreshed(let old, let new, let user):
            if let current = session, current.token == old, current.state != .awaitingToken,
               current.token != new || current.state != .authenticated {
                return .applied(UserSession(user: user ?? current.user, token: new, state: .authenticated), saves: true)
            }
            // An other account's refresh renews that account and never the active one.
            if let index = others.firstIndex(where: { $0.token == old && $0.state != .awaitingToken }),
               others[index].token != new || others[index].state != .authenticated {
                others[index] = UserSession(user: user ?? others[index].user, token: new, state: .authenticated)
                return .applied(session, saves: true)
            }
            let applied = session?.token == new || others.contains { $0.token == new }
            return .kept(session, applied ? .unchanged : .superseded)
        case .refreshEnded(let old):
            if let current = session, current.token == old { return .applied(nil, saves: true) }
            if let index = others.firstIndex(where: { $0.token == old }) {
                others.remove(at: index)
                return .applied(session, saves: true)
            }
            return .kept(session, session == nil ? .unchanged : .superseded)
        case .storeChanged(let stored, let storedOthers, let replacing):
            guard session?.token.secret == replacing else { return .kept(session, .superseded) }
            others = storedOthers
            return .applied(stored, saves: false)
        }
    }

    /// The transition `event` makes from `session` with no other account signed in.
    @inlinable
    static func transition(from session: UserSession<User>?, on event: Event) -> Transition {
        var others: [UserSession<User>] = []
        return transition(from: session, others: &others, on: event, accountID: { _ in "" }, isNamed: { _, name in name.isEmpty })
    }
}

extension HabitatEnvironment {
    /// Moves the session by `event`, telling the services (see ``EnvironmentSchema/services(_:for:)``)
    /// when it changed; returns the transition, so the caller commits or drops the update (its
    /// `session` is moved into the environment when applied, and the other accounts are
    /// changed in place).
    @inlinable
    mutating func applySessionEvent(_ event: SessionLifecycle<App.User>.Event) -> SessionLifecycle<App.User>.Transition {
        var transition = SessionLifecycle.transition(from: session, others: &otherAccounts, on: event, accountID: App.accountID(of:), isNamed: App.isAccount(_:named:))
        if transition.outcome.isApplied {
            // NB: moved out, not copied: a copy retains the user's and the token's storage once
            // more, and the transition releases it again.
            session = transition.session.take()
            applySession()
        }
        return transition
    }
}
