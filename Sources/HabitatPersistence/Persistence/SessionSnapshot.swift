public import Foundation
public import Habitat

/// A saved session and configuration, as loaded by ``SessionStore/load()``.
public struct SessionSnapshot<App: EnvironmentSchema>: Sendable {
    /// The saved session with its token, in state `AuthState.restored`; `nil` when the app
    /// was logged out (or the token is gone).
    public var session: UserSession<App.User>?
    /// The saved configuration.
    public var config: App.Config
    /// When the snapshot was saved, by the saving environment's clock.
    public var savedAt: Date?
    /// Why the session's token couldn't be used: the secret store threw, or may not be readable
    /// yet (the session is then `AuthState.awaitingToken`), or the stored token was damaged
    /// (the session is then `nil`, and the damaged token is left in place).
    public var tokenProblem: StoreError?
    /// What the secret store gave for the saved session's token, decided once, by the load.
    public var tokenRead: TokenRead
    /// The signed-in accounts saved beside the active one, each with its token, in the order
    /// they were saved; an account whose token is gone (signed out elsewhere) or damaged is not
    /// among them, and one whose token can't be read yet is `AuthState.awaitingToken`.
    public var otherAccounts: [UserSession<App.User>] = []
    /// Why an other account's token couldn't be used, by account name: a damaged item (the
    /// account is left out, the item left in place) or an unreadable one (the account awaits
    /// its token). The other accounts load all the same.
    public var accountProblems: [String: StoreError] = [:]

    /// What the store held when this snapshot was loaded, for the stack that restores it; `nil`
    /// while the session awaits its token.
    var known: KnownSession?

    /// The accounts, as a stack would hold them.
    var accounts: StoredAccounts<App> {
        StoredAccounts(active: session, others: otherAccounts)
    }

    /// Creates a snapshot.
    /// - Parameters:
    ///   - session: The restored session, if any.
    ///   - config: The configuration.
    ///   - savedAt: When it was saved.
    ///   - tokenProblem: Why the token couldn't be read, if it couldn't.
    public init(session: UserSession<App.User>?, config: App.Config, savedAt: Date?, tokenProblem: StoreError? = nil) {
        self.session = session
        self.config = config
        self.savedAt = savedAt
        self.tokenProblem = tokenProblem
        tokenRead = SessionMachine<App>.tokenRead(of: session, problem: tokenProblem)
    }
}

/// What a load read of the saved session's token: the one value the restore, the launch and
/// the unlock decide by, so no decision is made twice.
public enum TokenRead: Sendable, Equatable {
    /// The token is there: the session is restored with it.
    case present
    /// The secret store couldn't produce the token yet (a locked Keychain, a launch before the
    /// first unlock): the session waits for it, `AuthState.awaitingToken`, and nothing is
    /// written or deleted.
    case awaiting(StoreError)
    /// The stored token is damaged: the session is logged out, and the damaged token is left in
    /// place.
    case damaged(StoreError)
    /// There is no session, or its token is gone for good (a logout elsewhere, a reinstall).
    case absent
}
