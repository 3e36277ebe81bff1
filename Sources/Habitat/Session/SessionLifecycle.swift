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
// Every committed transition is one change on the stack's feed (the "notify" action is the
// commit itself); `save` asks autosave to write, and a save of a signed-out state deletes the
// token first (SessionStore).

/// The session's life as one value: what each event does to a session, and what it asks for.
/// See the table at the top of this file.
@usableFromInline
enum SessionLifecycle<User: Codable & Sendable> {
    /// What happened.
    @usableFromInline
    enum Event {
        case login(User, AuthToken)
        case logout
        case updateUser(User)
        case restored(UserSession<User>?)
        case tokenReadable(UserSession<User>?)
        case refreshed(from: AuthToken, to: AuthToken, user: User?)
        case refreshEnded(from: AuthToken)
        case storeChanged(UserSession<User>?, replacing: String?)
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

    /// A transition: the session after it, and whether the stack should save it.
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

    /// The transition `event` makes from `session`.
    @inlinable
    static func transition(from session: UserSession<User>?, on event: Event) -> Transition {
        switch event {
        case .login(let user, let token):
            return .applied(UserSession(user: user, token: token, state: .authenticated), saves: true)
        case .logout:
            return session == nil ? .kept(nil, .unchanged) : .applied(nil, saves: true)
        case .updateUser(let user):
            guard var updated = session else {
                return .kept(session, .refused(.notLoggedIn(operation: "updateCurrentUser")))
            }
            updated.user = user
            return .applied(updated, saves: true)
        case .restored(let stored):
            return .applied(stored, saves: false)
        case .tokenReadable(let stored):
            guard session?.state == .awaitingToken else { return .kept(session, .unchanged) }
            return .applied(stored, saves: true)
        case .refreshed(let old, let new, let user):
            if let current = session, current.token == old, current.state != .awaitingToken,
               current.token != new || current.state != .authenticated {
                return .applied(UserSession(user: user ?? current.user, token: new, state: .authenticated), saves: true)
            }
            return .kept(session, session?.token == new ? .unchanged : .superseded)
        case .refreshEnded(let old):
            guard let current = session else { return .kept(nil, .unchanged) }
            guard current.token == old else { return .kept(session, .superseded) }
            return .applied(nil, saves: true)
        case .storeChanged(let stored, let replacing):
            guard session?.token.secret == replacing else { return .kept(session, .superseded) }
            return .applied(stored, saves: false)
        }
    }
}

extension HabitatEnvironment {
    /// Moves the session by `event`, telling the services (see ``EnvironmentSchema/services(_:for:)``)
    /// when it changed; returns the transition, so the caller commits or drops the update (its
    /// `session` is moved into the environment when applied).
    @inlinable
    mutating func applySessionEvent(_ event: SessionLifecycle<App.User>.Event) -> SessionLifecycle<App.User>.Transition {
        var transition = SessionLifecycle.transition(from: session, on: event)
        if transition.outcome.isApplied {
            // NB: moved out, not copied: a copy retains the user's and the token's storage once
            // more, and the transition releases it again.
            session = transition.session.take()
            applySession()
        }
        return transition
    }
}
