// The session engine's one machine. Every decision about a session is made here, on values,
// with no I/O: the stack feeds it events, and runs what comes back (publish, save, refuse,
// drop; lead a refresh, wait for rotation, adopt what the store holds). One driver in the
// stack runs it (`EnvironmentStack.run(_:fileID:line:inspecting:)`), and one loop runs the
// refresh steps (`EnvironmentStack+Refresh.swift`).
//
// STATES of the active account, as a stack's top holds it (each other account has one too):
//
//   signed out       session == nil
//   signed in        .authenticated   a login or a refresh during this launch
//   restored         .restored        read back at launch; the server hasn't confirmed it yet
//   awaiting token   .awaitingToken   read back without its token (a locked Keychain): nothing
//                                     is written until the token is read or known gone
//
// The accounts are one value, `SignedInAccounts`: one session per account, by construction,
// and one rule for which account a name means (`EnvironmentSchema.accountID(of:)`, exactly).
//
// EVENTS are the cases of `Event`. `row(_:)` below is the table's fixed columns, what an event
// publishes when it applies and whether autosave then writes it; four events publish what the
// state decides instead (`publishes(_:in:)`): an account's end is `.logout` when it is the
// active account's, `.accountSignedOut` when it is another's, and a window's stack names what
// moved for it. `transition(_:_:)` is the state column, case by case. A save of a signed-out
// account deletes its token first (`SessionStore`). Restores and store changes are never saved: they are what the store holds.
//
// A REFRESH has states of its own, `RefreshStep`: looking at the session, completing an
// awaiting token from the store, in flight (one per session: the stack's `RefreshFlights`),
// leading it (`LeadStep`: asking the server, adopting a token another process saved, or
// waiting for the app's rotation, in an extension), and its answer (`refreshed` / `refreshEnded`
// events). The decisions on values only HabitatPersistence knows (what the store holds against
// what a stack holds, what a launch, an unlock and a refresh's caller hear, what a leader does
// with the server's answer) are in this file's one sibling, `SessionMachine+Store.swift` there.

/// The session engine's decisions, as a value: see the table at the top of this file.
@usableFromInline
package enum SessionMachine<App: EnvironmentSchema> {
    @usableFromInline package typealias Session = UserSession<App.User>

    /// What happened.
    ///
    /// NB: `indirect`: an event's payload is boxed. Unboxed, the snapshot and the closures made
    /// the event a large generic enum, which is copied through its value witness each time it
    /// is switched over (the table's row, then its transition): that cost a login + logout
    /// 1,400 instructions more than boxing does.
    @usableFromInline
    package indirect enum Event {
        case login(App.User, AuthToken)
        case addAccount(App.User, AuthToken)
        case switchAccount(String)
        case logout
        case logoutAccount(String)
        case logoutAll
        case updateUser((inout App.User) -> Void)
        case updateConfig((inout App.Config) -> Void)
        case restored(StoredAccounts<App>, config: App.Config)
        case tokenReadable(Session?, others: [Session])
        case refreshed(from: AuthToken, to: AuthToken, user: App.User?)
        case refreshEnded(from: AuthToken)
        case storeChanged(Session?, others: [Session], replacing: String?)
        /// A window's stack takes what the app's stack holds (``WindowEnvironment``): the account
        /// it shows, or none, the others, and the configuration; `cause` is the app's change.
        case followed(Session?, others: [Session], config: App.Config, cause: EnvironmentChangeKind)
    }

    /// What an event did to the state.
    @usableFromInline
    package enum Outcome: Equatable {
        /// The state moved: publish the row's change, and save it when the row says so.
        case applied
        /// Nothing to do: the state is already what the event would make it.
        case unchanged
        /// The event was about a session the stack no longer holds: dropped.
        case superseded
        /// The event is not allowed in this state.
        case refused(SessionError)

        /// Whether the state moved.
        ///
        /// NB: not `== .applied`: the derived `==` of a generic enum isn't specialised.
        @inlinable
        package var isApplied: Bool {
            if case .applied = self { return true }
            return false
        }
    }

    /// The table's fixed columns: the change `event` publishes when it applies, and whether
    /// autosave writes the state it leaves.
    /// For the events ``decidesByState(_:)`` names, what they publish is ``publishes(_:in:)``'s.
    @inlinable
    package static func row(_ event: Event) -> (publishes: EnvironmentChangeKind, saves: Bool) {
        switch event {
        case .login, .addAccount: (.login, true)
        case .switchAccount: (.accountSwitched, true)
        case .logout, .logoutAccount, .logoutAll, .refreshEnded: (.logout, true)
        case .updateUser: (.userUpdated, true)
        case .updateConfig: (.configUpdated, true)
        case .restored: (.restore, false)
        case .tokenReadable(.none, _): (.logout, true)
        case .tokenReadable: (.restore, true)
        case .refreshed: (.refresh, true)
        case .storeChanged: (.storeChanged, false)
        case .followed: (.storeChanged, false)
        }
    }

    /// Whether what `event` publishes depends on the state it applies to: ``publishes(_:in:)``.
    @inlinable
    package static func decidesByState(_ event: Event) -> Bool {
        switch event {
        case .logoutAccount, .logoutAll, .refreshEnded, .followed: true
        default: false
        }
    }

    /// The change `event` publishes when it applies to `environment`: the row's, but
    /// ``EnvironmentChangeKind/logout`` only when the active account's session ends (another
    /// account's end, or every account's while none is active, is
    /// ``EnvironmentChangeKind/accountSignedOut``), and for a window's stack
    /// (`followed`) what moved for it: its account signed out, signed in (an account it didn't
    /// hold, or any when a sign-in caused it), switched, its token
    /// rotated or read, another account signed out, a user's data, the configuration, or else
    /// ``EnvironmentChangeKind/storeChanged`` (an account signed in elsewhere).
    @usableFromInline
    package static func publishes(_ event: Event, in environment: HabitatEnvironment<App>) -> EnvironmentChangeKind {
        switch event {
        case .logoutAccount(let name):
            environment.position(named: name).map { $0 == .active ? .logout : .accountSignedOut } ?? .logout
        case .refreshEnded(let old):
            environment.position(holding: old).map { $0 == .active ? .logout : .accountSignedOut } ?? .logout
        case .logoutAll:
            environment.activeSession == nil ? .accountSignedOut : .logout
        case .followed(let shown, let others, _, let cause):
            switch (environment.activeSession, shown) {
            case (_?, nil): .logout
            case (nil, _?): .login
            case (_?, let new?) where environment.position(named: App.accountID(of: new.user)) == nil: .login
            // NB: a sign-in in the window (`cause` `.login`) whose new account its follower took
            // first, as another account, is still the window's sign-in (seen under load in CI).
            case (let old?, let new?) where App.accountID(of: old.user) != App.accountID(of: new.user): cause == .login ? .login : .accountSwitched
            case (let old?, let new?) where old.state == .awaitingToken && new.state != .awaitingToken: .restore
            case (let old?, let new?) where old.token != new.token: .refresh
            case _ where others.count < environment.otherSessions.count: .accountSignedOut
            default: cause == .userUpdated || cause == .configUpdated ? cause : .storeChanged
            }
        default: row(event).publishes
        }
    }

    /// The state column: moves `environment` by `event`. The services are told of a new
    /// session (``EnvironmentSchema/services(_:for:)``) when the accounts moved.
    @inlinable
    package static func transition(_ event: Event, _ environment: inout HabitatEnvironment<App>) -> Outcome {
        switch event {
        // any -> signed in; the user's account's other session, if any, ends.
        case .login(let user, let token):
            environment.signIn(Session(user: user, token: token), keepingActive: false)
        // any -> signed in as user; the active account, if another, joins the others.
        case .addAccount(let user, let token):
            environment.signIn(Session(user: user, token: token), keepingActive: true)
        // another's name -> that account active, each keeping its token and state;
        // the active's name -> unchanged; unknown -> refused.
        case .switchAccount(let name):
            switch environment.position(named: name) {
            case .other(let index)?: environment.activate(otherAt: index)
            case .active?: return .unchanged
            case nil: return .refused(.unknownAccount(name, operation: "switchAccount"))
            }
        // signed in, restored, awaiting -> signed out (the others stay); signed out -> unchanged.
        case .logout:
            guard environment.activeSession != nil else { return .unchanged }
            environment.remove(at: .active)
        // the account named -> signed out; unknown -> unchanged.
        case .logoutAccount(let name):
            guard let position = environment.position(named: name) else { return .unchanged }
            environment.remove(at: position)
        // any -> signed out, no others; nobody signed in -> unchanged.
        case .logoutAll:
            guard environment.activeSession != nil || !environment.otherSessions.isEmpty else { return .unchanged }
            environment.setAll(active: nil, others: [])
        // signed in, restored, awaiting -> the same state, a new user; signed out -> refused.
        case .updateUser(let change):
            guard var session = environment.activeSession else { return .refused(.notLoggedIn(operation: "updateCurrentUser")) }
            change(&session.user)
            environment.setActive(session)
        // any -> the same state, a new configuration.
        case .updateConfig(let change):
            change(&environment.config)
            return .applied
        // any -> what the store holds: restored, awaiting token or signed out, with its config.
        case .restored(let accounts, let config):
            environment.config = config
            environment.setAll(active: accounts.activeSession, others: accounts.otherSessions)
        // awaiting token (any account) -> what the store holds now; nothing waiting -> unchanged.
        case .tokenReadable(let stored, let others):
            guard environment.isAwaitingToken else { return .unchanged }
            environment.setAll(active: stored, others: others)
        // the account holding token t (not awaiting) -> signed in with t'; the account holding t'
        // already -> unchanged (another caller applied it); none -> superseded. Never another account.
        case .refreshed(let old, let new, let user):
            if let position = environment.position(holding: old), let session = environment.session(at: position),
               session.state != .awaitingToken, session.token != new || session.state != .authenticated {
                environment.replace(at: position, with: Session(user: user ?? session.user, token: new))
            } else {
                return environment.position(holding: new) == nil ? .superseded : .unchanged
            }
        // the account holding token t -> signed out; nobody signed in -> unchanged; else superseded.
        case .refreshEnded(let old):
            guard let position = environment.position(holding: old) else {
                return environment.activeSession == nil ? .unchanged : .superseded
            }
            environment.remove(at: position)
        // the state whose token the store replaced -> what the store holds now; the accounts the
        // store holds already (this stack's own save, seen before it recorded it) -> unchanged;
        // else superseded (a change made here since wins).
        case .storeChanged(let stored, let others, let replacing):
            guard environment.activeSession?.token.secret == replacing else { return .superseded }
            if environment.holds(active: stored, others: others) { return .unchanged }
            environment.setAll(active: stored, others: others)
        // any -> the accounts and configuration the app's stack holds, the window's account
        // active (users and configurations can't be compared: always applied).
        case .followed(let shown, let others, let config, _):
            environment.config = config
            environment.setAll(active: shown, others: others)
        }
        environment.applySession()
        return .applied
    }

    // MARK: Refresh

    /// Where a refresh of the account named `name` (the active one when `nil`) stands, looking at
    /// `accounts`, the stack's now.
    package enum RefreshStep {
        /// No such account: answer `SessionRefreshOutcome.notLoggedIn`.
        case notLoggedIn
        /// Its token is awaited: read it from the store (adopting what the store holds), then look again.
        case completeToken
        /// The caller judged another token: answer `SessionRefreshOutcome.superseded`.
        case superseded
        /// Join the flight for `session`'s token: lead it, or wait for its answer.
        case join(Session)
    }

    package static func refreshStep(_ accounts: some SignedInAccounts<App>, account name: String?, expecting expected: AuthToken?) -> RefreshStep {
        guard let session = accounts.session(named: name) else { return .notLoggedIn }
        if session.state == .awaitingToken { return .completeToken }
        if let expected, session.token != expected { return .superseded }
        return .join(session)
    }

    /// What the leader of a flight does, once its turn on the shared lease came.
    package enum LeadStep {
        /// A refresh landed meanwhile: the token is used already; look again.
        case stale
        /// The stack moved on while this one waited for its turn (signed the account out, or took
        /// another token for it): answer `SessionRefreshOutcome.superseded`, asking nothing.
        case movedOn
        /// Another process or stack saved the token that replaces this one: take it.
        case adopt(SessionRefresh<App.User>)
        /// Another process or stack saved the account's sign-out since this one last looked:
        /// take it, and answer `SessionRefreshOutcome.superseded` (the token may be one the
        /// other spent before signing out).
        case takeStoredSignOut
        /// An extension leaves rotating to the app: answer `SessionRefreshOutcome.waitingForRotation`.
        case waitForRotation
        /// The shared store can't be read now (a locked Keychain): another process may have
        /// rotated the token meanwhile, so nothing is asked. Answer
        /// `SessionRefreshOutcome.awaitingToken`.
        case waitForStore
        /// Ask the server.
        case ask
    }

    /// What the shared store holds of a refreshing account, read when the refresh's turn came or
    /// its answer arrived.
    package struct StoredAccount {
        /// The token another process or stack saved in place of the one refreshed (it rotated
        /// it, or signed the account in again), as a refresh's answer.
        package var rotated: SessionRefresh<App.User>?
        /// Whether the store could be read to tell (`true` when none is shared: nobody else
        /// spends this token).
        package var readable = true
        /// Whether another saved the account's sign-out since this stack last looked.
        package var signedOut = false

        package init(rotated: SessionRefresh<App.User>? = nil, readable: Bool = true, signedOut: Bool = false) {
            (self.rotated, self.readable, self.signedOut) = (rotated, readable, signedOut)
        }
    }

    /// - Parameters:
    ///   - holdsToken: Whether the stack still held the token the flight is for when its turn was
    ///     asked for, and whether it does now that the turn came.
    ///   - stored: What the shared store holds of the account now.
    ///   - refreshesTokens: Whether this process may call the server (not an extension).
    package static func leadStep(holdsToken: (asked: Bool, now: Bool), stored: @autoclosure () -> StoredAccount, refreshesTokens: Bool) -> LeadStep {
        guard holdsToken.asked else { return .stale }
        guard holdsToken.now else { return .movedOn }
        let stored = stored()
        if let rotated = stored.rotated { return .adopt(rotated) }
        // NB: a token the store can't be read to check, or whose account another signed out,
        // may be one the other spent first (the session explorer found a stack that missed a
        // rotation sending the spent token again, while locked or after the other's sign-out).
        guard stored.readable else { return .waitForStore }
        if stored.signedOut { return .takeStoredSignOut }
        return refreshesTokens ? .ask : .waitForRotation
    }

    /// The event a refresh's answer about `token` makes.
    /// `nil` for ``SessionRefresh/notSent``: nothing happened to the session.
    package static func event(answering answer: SessionRefresh<App.User>, about token: AuthToken) -> Event? {
        switch answer {
        case .refreshed(let new, let user): .refreshed(from: token, to: new, user: user)
        case .ended: .refreshEnded(from: token)
        case .notSent: nil
        }
    }
}
