import Foundation
import Habitat

// The machine's store half: the sibling of `SessionMachine.swift` (Habitat), for the decisions
// whose values only HabitatPersistence knows (what the store holds, what a caller hears). Values
// in, an answer out, no I/O: the store and the stack read the values, ask here, and run the
// answer.
//
// DECISIONS, and who asks
//
//   tokenSettled(for:in:)    "is the awaited token read?": the one rule, for the unlock, a
//                            refresh of an account that waits, and the follower
//   restored(_:from:...)     what a load makes of an account's saved session and its item
//   knowsStore(after:)       whether a load knows what the store holds
//   guardsStore(after:)      whether a failed load leaves a snapshot no save may write over
//   tokenRead(of:problem:)   what a load read of the saved session's token (`SessionSnapshot.tokenRead`)
//   launchAnswer(_:)         what `restoreAtLaunch` says
//   unlockStep(_:loaded:)    what `protectedDataDidBecomeAvailable` does: answer, or take the store's
//   unlockAnswer(_:applied:) what it says once the stack took them
//   savesNothing(_:)         a save while the active account waits for its token
//   keepsStoredItem(_:)      a save keeps an account's item unread (it waits for its token)
//   comparesWithStore(_:..)  whether a save compares with the store first
//   saveRoute(_:known:...)   a save by a stack that knew the store: as asked, take the store's
//                            (`movedPast`), or merge (`merged`: which account wins, which is active)
//   signOutStands(_:...)     a sign-out of every account saved while the secrets can't be read
//   mergeMoves(_:from:)      whether a merged save changed what the stack holds (it takes it then)
//   followerTakes(_:known:)  a follower's check: does the store hold another session?
//   waiterThrows(_:as:)      a waiter whose leader failed: throw the leader's error, or lead
//   storedAccount(of:...)    what the shared store holds of a refreshing account (rotated, signed out)
//   answerStep(_:...)        what a refresh's leader does with the server's answer
//   unconfirmed(_:...)       a refreshed token that wasn't saved ends the session
//   refreshOutcome(_:...)    what a refresh's caller hears
//   releasesLease(sent:...)  whether the refresh lease goes back, or stays to mark the token spent

extension SessionMachine {
    // MARK: Reading the store

    /// Whether a load (`loaded`, `nil` when nothing is saved) settles the wait of the account
    /// named `name` (the active one when `nil`) for its token: the account is there with its
    /// token, or gone. `false` while it still waits (the secret store still can't be read).
    static func tokenSettled(for name: String?, in loaded: StoredAccounts<App>?) -> Bool {
        loaded?.session(named: name)?.state != .awaitingToken
    }

    /// What a load makes of `saved`, read with `secret` (the item under `key`): restored with its
    /// token; awaiting it when the secret store can't say yet; `nil` when the token is gone or
    /// damaged (then with the problem).
    static func restored(
        _ saved: SessionStore<App>.SavedSession,
        from secret: Result<Data?, StoreError>,
        key: String,
        absenceIsFinal: Bool
    ) -> (Session?, StoreError?) {
        let awaiting = Session(user: saved.user, token: AuthToken("", expiresAt: saved.tokenExpiresAt), state: .awaitingToken)
        switch secret {
        case .success(let secret):
            if let token = SessionStore<App>.token(in: secret, pairedWith: saved.pairID) {
                return (Session(user: saved.user, token: AuthToken(token, expiresAt: saved.tokenExpiresAt), state: .restored), nil)
            }
            if let secret, saved.pairID != nil, TokenRecord.decode(secret) == nil {
                return (nil, .decodingFailed(
                    key: key,
                    reason: "the stored token is not a token record (\(secret.count) bytes); it was left in place and the session is logged out"
                ))
            }
            if !absenceIsFinal {
                return (awaiting, .unavailable(
                    key: key,
                    reason: "the secret store has no token for the saved session, and may not be readable yet (before the device's first unlock)"
                ))
            }
            return (nil, nil)
        case .failure(let error):
            // NB: a token that can never be read again ends the session, with its reason.
            if case .protectionInvalidated = error { return (nil, error) }
            return (awaiting, error)
        }
    }

    /// Whether a load that failed with `error` found a snapshot this stack must never write
    /// over: a newer app's (a downgrade destroys nothing). Its saves then compare with the store,
    /// which refuses them with the same error.
    static func guardsStore(after error: SnapshotError) -> Bool {
        if case .unsupportedVersion = error { return true }
        return false
    }

    /// What a load read of the saved session's token: the one classification the launch, the
    /// unlock and the restore decide by, from the restored `session` and the `problem` found.
    static func tokenRead(of session: Session?, problem: StoreError?) -> TokenRead {
        switch (session, problem) {
        case (let session?, let problem?) where session.state == .awaitingToken: .awaiting(problem)
        case (_, let problem?): .damaged(problem)
        case (.some, nil): .present
        case (nil, nil): .absent
        }
    }

    /// What a launch's restore says, from what it restored (`nil`: nothing saved).
    static func launchAnswer(_ snapshot: SessionSnapshot<App>?) -> LaunchRestore<App> {
        guard let snapshot else { return .nothingSaved }
        if case .awaiting(let problem) = snapshot.tokenRead { return .awaitingToken(snapshot, problem: .store(problem)) }
        return snapshot.session == nil ? .restoredLoggedOut(snapshot) : .restored(snapshot)
    }

    /// What a launch's restore says when it failed.
    static func launchAnswer(failure error: SnapshotError) -> LaunchRestore<App> {
        if case .store(.corrupted(_, let movedTo, _)) = error { return .setAside(movedTo: movedTo, problem: error) }
        return .failed(error)
    }

    /// What an unlock does with the store it read with final reads (`loaded`).
    enum UnlockStep {
        /// Answer at once: no session waits, or the store still can't produce its token.
        case answer(AwaitingTokenResolution)
        /// The waiting session's token is read (or gone): the stack takes the store's accounts.
        case take(SessionSnapshot<App>?)
    }

    /// An unlock's step, for a stack holding `environment`.
    static func unlockStep(_ environment: HabitatEnvironment<App>, loaded: Result<SessionSnapshot<App>?, SnapshotError>) -> UnlockStep {
        guard environment.isAwaitingToken else { return .answer(.notAwaiting) }
        switch loaded {
        case .failure(let error): return .answer(.stillAwaiting(error))
        case .success(let snapshot):
            return tokenSettled(for: nil, in: snapshot?.accounts) ? .take(snapshot) : .answer(unlockAnswer(snapshot, applied: false))
        }
    }

    /// What an unlock says of a stack whose session waited: `loaded` is the store's (with final
    /// reads), `applied` whether the stack took it.
    static func unlockAnswer(_ loaded: SessionSnapshot<App>?, applied: Bool) -> AwaitingTokenResolution {
        if case .awaiting(let problem)? = loaded?.tokenRead { return .stillAwaiting(.store(problem)) }
        guard applied else { return .notAwaiting }
        return loaded?.session == nil ? .loggedOut(problem: loaded?.tokenProblem) : .restored
    }

    // MARK: Saving

    /// Whether a save of `environment` writes nothing: its active account waits for its token
    /// (the saved snapshot and tokens stay as they were until the token is read, or the app
    /// says the store is readable).
    static func savesNothing(_ environment: HabitatEnvironment<App>) -> Bool {
        environment.session?.state == .awaitingToken
    }

    /// Whether a save keeps `session`'s stored item as it is, unread: an account that waits for
    /// its token (one behind Face ID, say); the rest is saved.
    static func keepsStoredItem(_ session: Session) -> Bool {
        session.state == .awaitingToken
    }

    /// Whether a load that found `loaded` knows what the store holds (for the stack's later
    /// saves and follower to compare with): not while any account waits for its token.
    static func knowsStore(after loaded: StoredAccounts<App>) -> Bool {
        !loaded.isAwaitingToken
    }

    // MARK: Saving beside other processes

    /// How a save goes, by a stack that knew the store held `known` and finds `stored`.
    enum SaveRoute: Equatable {
        /// Nobody changed the store since: save as asked.
        case asAsked
        /// The store moved past what the stack knew, and the stack changed nothing since: the
        /// store's accounts stay, the configuration is written beside them, and the stack takes
        /// them.
        case takeStored
        /// Both changed: save `merged(_:known:stored:snapshot:)`.
        case merge
    }

    /// Whether a save compares with the store first: not when the stack knows nothing of it,
    /// nor while its active account waits for its token (the save writes no account then).
    static func comparesWithStore(_ environment: HabitatEnvironment<App>, known: KnownSession?) -> Bool {
        known != nil && !savesNothing(environment)
    }

    /// A save's route: see ``SaveRoute``.
    static func saveRoute(_ environment: HabitatEnvironment<App>, known: KnownSession, stored: KnownSession) -> SaveRoute {
        if stored.samePairs(known) { return .asAsked }
        return movedPast(known, stored: stored, by: environment) ? .takeStored : .merge
    }

    /// Whether a sign-out of every account stands while the secret store can't be read: when the
    /// saved snapshot names the pairs the stack knew (`savedPairs`), nobody changed it.
    static func signOutStands(_ environment: HabitatEnvironment<App>, known: KnownSession, savedPairs: [String?]?) -> Bool {
        environment.session == nil && environment.otherAccounts.isEmpty && savedPairs == known.pairs
    }

    /// Whether the store moved past what the stack knew while the stack itself changed nothing
    /// (its active token and its other accounts' are the ones it knew, or it knew and holds no
    /// account). A stack that signed accounts out is merged instead: the accounts it signed out
    /// stay signed out (the session explorer found a stale sign-out taking back every account,
    /// the one it signed out included).
    static func movedPast(_ known: KnownSession, stored: KnownSession, by environment: HabitatEnvironment<App>) -> Bool {
        let others = Dictionary(environment.otherAccounts.map { (App.accountID(of: $0.user), $0.token.secret) }, uniquingKeysWith: { first, _ in first })
        if environment.session == nil, others.isEmpty {
            return known.entries.isEmpty && stored.pairID != nil
        }
        return environment.session?.token.secret == known.secret && others == known.others.mapValues(\.secret)
    }

    /// `environment`, changed by this stack since it knew `known`, merged with what changed in
    /// the store meanwhile (`snapshot`, and `stored`, the pairs it names), account by account:
    /// an account this stack didn't touch is taken as the store has it (renewed, signed out, or
    /// signed in elsewhere), never saved back as it was; and when this stack didn't switch, the
    /// store's choice of the active account is taken too.
    static func merged(
        _ environment: HabitatEnvironment<App>,
        known: KnownSession,
        stored: KnownSession,
        snapshot: SessionSnapshot<App>?
    ) -> HabitatEnvironment<App> {
        func pair(_ name: String, in session: KnownSession) -> String? {
            name == session.active ? session.pairID : session.others[name]?.id
        }
        func secret(_ name: String, in session: KnownSession) -> String? {
            name == session.active ? session.secret : session.others[name]?.secret
        }
        let storedAccounts = (snapshot?.accounts.allSessions ?? []).map { (App.accountID(of: $0.user), $0) }
        var accounts = environment.accounts.map { (App.accountID(of: $0.user), $0) }
        let knownNames = known.names
        accounts = accounts.compactMap { name, session in
            guard knownNames.contains(name), pair(name, in: stored) != pair(name, in: known),
                  session.token.secret == secret(name, in: known) else { return (name, session) }
            return storedAccounts.first { $0.0 == name }
        }
        for (name, session) in storedAccounts where !knownNames.contains(name) && !accounts.contains(where: { $0.0 == name }) {
            accounts.append((name, session))
        }
        var active = environment.activeAccountID
        // NB: the same name with another token is a login here, not an untouched choice; and the
        // store's choice stands only for an account the merge keeps (this stack may have signed
        // it out: the session explorer found a save leaving no account active).
        if active == known.active, environment.session?.token.secret == known.secret, stored.active != known.active,
           accounts.contains(where: { $0.0 == stored.active }) {
            active = stored.active
        }
        // An account active elsewhere that this stack never knew stays active when this stack
        // has none active (it signed its own out).
        if active == nil, let elsewhere = stored.active, !knownNames.contains(elsewhere) { active = elsewhere }
        var merged = environment
        merged.setAll(active: accounts.first { $0.0 == active }?.1, others: accounts.filter { $0.0 != active }.map(\.1))
        return merged
    }

    /// Whether `merged`, what a save of `environment` merged with the store and wrote, differs
    /// from what the stack holds: an account's token, an account signed in or out, or which one
    /// is active (the explorer found a merge that only made an account active left the stack
    /// holding it in the background). The stack takes the merge then.
    static func mergeMoves(_ merged: HabitatEnvironment<App>, from environment: HabitatEnvironment<App>) -> Bool {
        !environment.holds(active: merged.session, others: merged.otherAccounts)
    }

    /// Whether a follower's check, finding the store's pairs `stored`, loads the store and offers
    /// it to the stack: the store holds another session than the stack last knew (`known`).
    static func followerTakes(_ stored: KnownSession, known: KnownSession?) -> Bool {
        !stored.samePairs(known)
    }

    // MARK: Refreshing

    /// What a caller that waited on a leader hears when the leader failed with `error`: the error
    /// when its own `refresh` could have thrown it, `nil` when it leads the next try instead (the
    /// leader was cancelled, or threw what this caller can't report).
    static func waiterThrows<E: Error>(_ error: any Error, as _: E.Type) -> E? {
        error is CancellationError ? nil : error as? E
    }

    /// What a load of the shared store (`loaded`: `nil` when none is shared, a failure when it
    /// can't be read now) says of `session`'s account, which this stack knew the store held as
    /// `known`. An account whose token can't be read yet is unreadable (another may have rotated
    /// it); one gone from the store is signed out only if this stack knew it there (otherwise
    /// the server decides).
    static func storedAccount(of session: Session, loaded: Result<SessionSnapshot<App>?, SnapshotError>?, known: KnownSession?) -> StoredAccount {
        guard let loaded else { return StoredAccount() }
        let name = App.accountID(of: session.user)
        guard case .success(let snapshot) = loaded, tokenSettled(for: name, in: snapshot?.accounts) else { return StoredAccount(readable: false) }
        guard let stored = snapshot?.accounts.session(named: name) else { return StoredAccount(signedOut: known?.holds(name) == true) }
        guard stored.token.secret != session.token.secret else { return StoredAccount() }
        return StoredAccount(rotated: .refreshed(token: stored.token, user: stored.user))
    }

    /// What a refresh's leader does with the server's answer.
    enum AnswerStep {
        /// The refresh can't be confirmed: end the session.
        case endUnconfirmed(RefreshUnconfirmed)
        /// Another process or stack saved the account's sign-out while the request was out: take
        /// the store's sign-out, drop the answer (`superseded`).
        case takeStoredSignOut
        /// Apply this answer (the server's, or the store's newer token).
        case apply(SessionRefresh<App.User>)
    }

    /// - Parameters:
    ///   - answer: The server's answer.
    ///   - leaseLapsed: Whether the lease the refresh held lapsed while the server answered.
    ///   - stored: What the shared store holds of the account now (read only when the answer
    ///     needs it: its sign-out since, or a token another rotated or signed in meanwhile).
    static func answerStep(
        _ answer: SessionRefresh<App.User>,
        leaseLapsed: @autoclosure () -> Bool,
        stored: @autoclosure () -> StoredAccount
    ) -> AnswerStep {
        switch answer {
        case .refreshed:
            // NB: an answer that comes after another process signed the account out would undo
            // that sign-out (found by the session explorer).
            if leaseLapsed() { return .endUnconfirmed(.leaseLapsed) }
            return stored().signedOut ? .takeStoredSignOut : .apply(answer)
        // A session the server ended because another process rotated its token or signed the
        // account in again meanwhile goes on with the store's token.
        case .ended: return .apply(stored().rotated ?? answer)
        case .notSent: return .apply(answer)
        }
    }

    /// Why a refresh whose answer was applied (`outcome`) can't be confirmed after all: new
    /// tokens the store couldn't keep (`saveFailure`), which a relaunch would send again.
    static func unconfirmed(_ outcome: SessionRefreshOutcome, saveFailure: SnapshotError?) -> RefreshUnconfirmed? {
        guard outcome == .refreshed, let saveFailure else { return nil }
        return .notSaved(problem: saveFailure)
    }

    /// What a refresh's caller hears, from the answer and what applying it did.
    static func refreshOutcome(_ answer: SessionRefresh<App.User>, _ outcome: Outcome, expired: Bool, joined: Bool) -> SessionRefreshOutcome {
        switch (answer, outcome) {
        case (.notSent, _): .notSent
        case (.refreshed, .applied), (.refreshed, .unchanged): .refreshed
        case (.ended, .applied): .ended(expired: expired)
        // Signed out already: by the leader of this refresh, or by someone else.
        case (.ended, .unchanged): joined ? .ended(expired: expired) : .superseded
        case (_, .superseded), (_, .refused): .superseded
        }
    }

    /// Whether the refresh lease goes back: only when the token wasn't sent, or its successor is
    /// saved. Otherwise it stays, naming the token, so that no one sends it again.
    static func releasesLease(sent: Bool, outcome: SessionRefreshOutcome) -> Bool {
        !sent || outcome == .notSent || outcome == .refreshed
    }
}
