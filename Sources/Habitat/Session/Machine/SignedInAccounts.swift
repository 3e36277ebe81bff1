/// The accounts signed in, one of them (or none) active: one session per account
/// (``EnvironmentSchema/accountID(of:)``), by construction. Every way in (the environment's
/// setters, sign-in, a switch, a restore) goes through the methods below, which keep it so: the
/// active account never appears among the others, and no account twice.
///
/// It answers the two questions the session engine asks of accounts, one way each: which
/// account a name means (``EnvironmentSchema/accountID(of:)``, exactly), and whether any
/// is awaiting its token.
///
/// NB: a protocol over two stored fields, not a struct stored in the environment: a struct
/// nested in the environment made every copy and destruction of an environment go through value
/// witnesses (scope enter + leave +25%), and a struct moved out and back for each event cost a
/// login + logout 1,400 instructions. ``HabitatEnvironment`` holds the accounts in place;
/// ``StoredAccounts`` is the same value on its own (a snapshot's, the tests').
@usableFromInline
package protocol SignedInAccounts<App> {
    associatedtype App: EnvironmentSchema
    /// The active account's session.
    var activeSession: UserSession<App.User>? { get set }
    /// The other accounts' sessions.
    var otherSessions: [UserSession<App.User>] { get set }
}

/// Where an account is: active, or at an index of the others.
@usableFromInline
package enum AccountPosition: Equatable {
    case active
    case other(Int)
}

extension SignedInAccounts {
    @usableFromInline package typealias Session = UserSession<App.User>

    /// Every account, the active one first.
    @inlinable
    package var allSessions: [Session] {
        guard let activeSession else { return otherSessions }
        return [activeSession] + otherSessions
    }

    /// Where the account named `name` is: the one rule: its ``EnvironmentSchema/accountID(of:)`` is `name`.
    ///
    /// NB: the others first: a switch's common case looks at the active account not at all.
    @inlinable
    package func position(named name: String) -> AccountPosition? {
        if let index = otherSessions.firstIndex(where: { App.isAccount($0.user, named: name) }) { return .other(index) }
        if let active = activeSession, App.isAccount(active.user, named: name) { return .active }
        return nil
    }

    /// Where the account whose token is `token` is, active first.
    @inlinable
    package func position(holding token: AuthToken) -> AccountPosition? {
        if activeSession?.token == token { return .active }
        return otherSessions.firstIndex { $0.token == token }.map { .other($0) }
    }

    /// The session at `position`.
    @inlinable
    package func session(at position: AccountPosition) -> Session? {
        switch position {
        case .active: activeSession
        case .other(let index): otherSessions[index]
        }
    }

    /// The account named `name` (see ``position(named:)``); the active one when `name` is `nil`.
    @inlinable
    package func session(named name: String?) -> Session? {
        guard let name else { return activeSession }
        return position(named: name).flatMap { session(at: $0) }
    }

    /// Whether any account is awaiting its token (``AuthState/awaitingToken``).
    /// Whether these are the accounts `active` and `others`: the same accounts with the same
    /// tokens, in the same order. Their states aside: a store reads its sessions back as
    /// `AuthState.restored`, and a stack that signed in holds them `AuthState.authenticated`.
    @inlinable
    package func holds(active: Session?, others: [Session]) -> Bool {
        func same(_ a: Session, _ b: Session) -> Bool { a.token == b.token && App.accountID(of: a.user) == App.accountID(of: b.user) }
        let theirs = (active.map { [$0] } ?? []) + others
        return (activeSession == nil) == (active == nil) && allSessions.count == theirs.count && zip(allSessions, theirs).allSatisfy(same)
    }

    @inlinable
    package var isAwaitingToken: Bool {
        activeSession?.state == .awaitingToken || otherSessions.contains { $0.state == .awaitingToken }
    }

    /// Makes `session` the active account's; the account's other session, if any, ends.
    @inlinable
    package mutating func setActive(_ session: consuming Session?) {
        // NB: one account, the common case, looks at nothing else, and the session is moved
        // in, not copied (a generic session's copy goes through its value witness).
        if !otherSessions.isEmpty, let user = session?.user {
            let name = App.accountID(of: user)
            otherSessions.removeAll { App.accountID(of: $0.user) == name }
        }
        activeSession = session
    }

    /// Makes `others` the other accounts, keeping the first session of each account and none of
    /// the active one's.
    @inlinable
    package mutating func setOthers(_ others: [Session]) {
        guard !others.isEmpty else { return otherSessions = [] }
        var seen = Set(activeSession.map { [App.accountID(of: $0.user)] } ?? [])
        otherSessions = others.filter { seen.insert(App.accountID(of: $0.user)).inserted }
    }

    /// Replaces every account with `active` and `others` (what a store holds), one session per
    /// account.
    @inlinable
    package mutating func setAll(active: Session?, others: [Session]) {
        activeSession = active
        setOthers(others)
    }

    /// Signs `session` in as the active account; the account that was active joins the others
    /// when `keepingActive` and it is another account.
    @inlinable
    package mutating func signIn(_ session: consuming Session, keepingActive: Bool) {
        if keepingActive, let current = activeSession, App.accountID(of: current.user) != App.accountID(of: session.user) {
            otherSessions.append(current)
        }
        setActive(session)
    }

    /// Makes the other account at `index` the active one; the active one takes its place.
    @inlinable
    package mutating func activate(otherAt index: Int) {
        guard let current = activeSession else { return activeSession = otherSessions.remove(at: index) }
        // NB: copied field by field: a plain copy of a generic session goes through its value
        // witness (see `HabitatEnvironment.fieldwiseCopy`): 80 instructions more per switch.
        var target = Session(user: current.user, token: current.token, state: current.state)
        swap(&target, &otherSessions[index])
        activeSession = target
    }

    /// Signs out the account at `position`.
    @inlinable
    package mutating func remove(at position: AccountPosition) {
        switch position {
        case .active: activeSession = nil
        case .other(let index): otherSessions.remove(at: index)
        }
    }

    /// Replaces the session at `position`; a user with another name drops that account's other
    /// session.
    @inlinable
    package mutating func replace(at position: AccountPosition, with session: Session) {
        switch position {
        case .active: setActive(session)
        case .other(let index):
            otherSessions[index] = session
            setOthers(otherSessions)
        }
    }
}

/// Signed-in accounts on their own: a snapshot's, or a test's.
@usableFromInline
package struct StoredAccounts<App: EnvironmentSchema>: SignedInAccounts {
    @usableFromInline package var activeSession: UserSession<App.User>?
    @usableFromInline package var otherSessions: [UserSession<App.User>] = []

    /// `active` and `others`, one session per account.
    @inlinable
    package init(active: UserSession<App.User>?, others: [UserSession<App.User>] = []) {
        setAll(active: active, others: others)
    }
}

extension HabitatEnvironment: SignedInAccounts {}
