import Foundation
public import Habitat

extension EnvironmentStack {
    /// Confirms the current session with the server, or ends it; concurrent calls share one
    /// request.
    ///
    /// `refresh` receives the current session (typically `AuthState.restored` after a launch)
    /// and returns a new token, optionally with fresh user data, or says the session is gone.
    /// The stack then becomes `AuthState.authenticated` with the new token, or logs out. If
    /// the session changed while `refresh` ran (the user logged out or someone else logged
    /// in, here or, with autosave on, in another process or stack on the store), the result is
    /// dropped and ``SessionRefreshOutcome/superseded`` returned.
    ///
    /// ```swift
    /// let outcome = try await appEnvironment.refreshSession { session in
    ///     switch try await api.refresh(session.token) {
    ///     case .ok(let token, let user): .refreshed(token: token, user: user)
    ///     case .revoked: .ended
    ///     }
    /// }
    /// ```
    ///
    /// **One request at a time.** Servers that rotate refresh tokens revoke a session whose old
    /// token is used twice, so two requests that both see an expired token must not both
    /// refresh. While one call refreshes a session, every other call for the same session and
    /// the same stack (or the same scope) waits for it instead of calling its own `refresh`, and
    /// then returns the same outcome. The answer is applied, and saved when autosave is on,
    /// before any of them resumes. A waiting call that is cancelled keeps waiting: the request
    /// it shares goes on for the others.
    ///
    /// **A refresh token is sent at most once.** Once a request may have reached the server,
    /// any end but "new tokens received and saved" ends the session instead of keeping a token
    /// that may be spent (the user signs in again; a rotating server would otherwise take the
    /// reuse for theft and revoke every session of the user):
    /// - `refresh` throws: the session ends and the call throws the error; the calls that waited
    ///   hear ``SessionRefreshOutcome/ended(expired:)``. Unless the request provably never left:
    ///   `refresh` returns `SessionRefresh.notSent`, or throws a `URLError` of no connection
    ///   (`.notConnectedToInternet`, `.cannotFindHost`, `.cannotConnectToHost`,
    ///   `.dnsLookupFailed`, `.dataNotAllowed`...): then nothing changes, the waiting calls
    ///   throw the same error if their own `refresh` could throw it (otherwise the next one
    ///   asks), and a later refresh may try again. An app must not sign its user out for being
    ///   offline: say `.notSent` whenever you know the request didn't leave (a check of
    ///   cancellation before the call, say).
    /// - The new token can't be saved (autosave on, a locked secret store):
    ///   ``SessionRefreshOutcome/endedUnconfirmed(_:)`` with
    ///   ``RefreshUnconfirmed/notSaved(problem:)``; a relaunch would otherwise send the old token
    ///   again.
    /// - The refresh outlived its lease (below): ``RefreshUnconfirmed/leaseLapsed``.
    /// - `refresh` says `.ended`, but another process (or stack on the store) saved a newer token
    ///   for the account meanwhile (it rotated the token, or signed the account in again): the
    ///   session goes on with that token, ``SessionRefreshOutcome/refreshed``.
    ///
    /// **Across processes.** With autosave on, stacks and processes that save to the same
    /// session store take turns too, by a lease beside its lock file (``SessionStore/lockFile``;
    /// the store's `refreshLease` says how long it lasts, a minute by default). The one whose
    /// turn it is re-reads the store first, and when another refreshed meanwhile, it takes the
    /// token that one saved instead of calling `refresh`. When the store's secrets can't be read
    /// then (a locked Keychain), it can't tell whether another spent the token: nothing is asked
    /// (``SessionRefreshOutcome/awaitingToken``: refresh again once the device is unlocked). When
    /// another saved the account's sign-out since this stack last looked, the stack takes it and
    /// nothing is asked (``SessionRefreshOutcome/superseded``); so too when this stack itself
    /// moved on while it waited for its turn (it signed the account out, or took another token
    /// for it). The lease names the token it spends
    /// (by a fingerprint, never the token), and is handed back only when the token wasn't sent
    /// or its successor is saved: a refresher that finds a lapsed lease naming its own token (its
    /// holder killed, suspended, or slower than the lease, or a session that ended) ends the
    /// session instead of sending the token again (``RefreshUnconfirmed/spentElsewhere``), and
    /// a holder whose lease lapsed while it waited for the server drops the answer. A lease
    /// beside a store whose directory can't be trusted (others may write it) fails closed:
    /// ``SessionRefreshOutcome/refused(problem:)``, and nothing is asked.
    ///
    /// A session `AuthState.awaitingToken` is completed from the autosave store first; while
    /// its token still can't be read, nothing is asked and the outcome is
    /// ``SessionRefreshOutcome/awaitingToken``.
    ///
    /// **Extensions.** When the autosave store was made with `refreshesTokens: false` (an app
    /// extension's), `refresh` is never called: the outcome is ``SessionRefreshOutcome/refreshed``
    /// once the app has saved a newer token, ``SessionRefreshOutcome/waitingForRotation`` until
    /// then. An extension that follows the store often gets the app's new token that way first:
    /// a refresh asked after it arrived refreshes that token (`waitingForRotation`), and one it
    /// arrived during answers ``SessionRefreshOutcome/superseded``. After either, compare the
    /// session's token with the one the failed request used: when they differ, retry with it.
    ///
    /// `refresh` runs on the caller's actor, so a `@MainActor` view model can pass a closure
    /// that touches its own state.
    ///
    /// **Another account.** Given an account's `name`, the refresh is that signed-in account's,
    /// active or not: a background refresh renews an account the user isn't looking at, and the
    /// active session is never touched. When the account is switched away from while `refresh`
    /// runs, the new token goes to that account, wherever it is now; when it was signed out
    /// meanwhile, the answer is dropped and the outcome is ``SessionRefreshOutcome/superseded``.
    ///
    /// ```swift
    /// for account in appEnvironment.current.otherAccounts where account.isExpired(at: .now) {
    ///     _ = try await appEnvironment.refreshSession(account: "\(account.user.id)") { session in
    ///         .refreshed(token: try await api.refresh(session.token))
    ///     }
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - name: The account's name (`EnvironmentSchema.accountID(of:)`); the active account
    ///     when `nil`, the default.
    ///   - isolation: The actor `refresh` runs on; the caller's, by default.
    ///   - fileID: The calling file, recorded in the frame's `FrameOrigin`.
    ///   - line: The calling line, recorded with it.
    ///   - refresh: Asks the server about the session.
    /// - Returns: What happened; ``SessionRefreshOutcome/notLoggedIn`` when no account (with
    ///   that name) is signed in.
    /// - Throws: Whatever `refresh` throws (this call's, or the one it waited for). The session
    ///   has ended then, unless the error says the request never left (see above).
    public func refreshSession<E: Error>(
        account name: String? = nil,
        isolation: isolated (any Actor)? = #isolation,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        using refresh: (UserSession<App.User>) async throws(E) -> SessionRefresh<App.User>
    ) async throws(E) -> SessionRefreshOutcome {
        try await refreshSession(expecting: nil, account: name, isolation: isolation, at: (fileID, line), using: refresh)
    }

    /// `refreshSession(account:using:)`, but only while the session's token is
    /// `expected` (when given): a caller that judged a token expiring doesn't refresh its
    /// successor; of the account named `name` (the active one when `nil`). `site` is the
    /// caller's, for the origins of the frames it makes.
    private func refreshSession<E: Error>(
        expecting expected: AuthToken?,
        account name: String?,
        isolation: isolated (any Actor)?,
        at site: (fileID: StaticString, line: UInt),
        using refresh: (UserSession<App.User>) async throws(E) -> SessionRefresh<App.User>
    ) async throws(E) -> SessionRefreshOutcome {
        while true {
            switch SessionMachine.refreshStep(current, account: name, expecting: expected) {
            case .notLoggedIn: return .notLoggedIn
            case .superseded: return .superseded
            case .completeToken:
                guard completeAwaitingToken(account: name, at: site) else { return .awaitingToken }
            case .join(let session):
                let expired = session.isExpired(at: current.now())
                let key = RefreshFlights<App.User>.Key(state: withActiveState { ObjectIdentifier($0) }, token: session.token.secret)
                switch await refreshes.join(key) {
                case .lead:
                    if let outcome = try await lead(key, for: session, account: name, expired: expired, isolation: isolation, at: site, using: refresh) {
                        return outcome
                    }
                case .answer(.success(let answer)):
                    return apply(answer, to: session, expired: expired, joined: true, at: site)
                case .answer(.failure(let error)):
                    if let error = SessionMachine<App>.waiterThrows(error, as: E.self) { throw error }
                    // The leader was cancelled, or failed in a way this caller's `refresh` can't
                    // report: the next caller leads.
                case .stale:
                    break
                }
            }
        }
    }

    /// Leads the flight `key` for `session`: takes its turn on the shared lease, then runs the
    /// machine's `SessionMachine.LeadStep`, and lands the flight with the answer. Returns
    /// `nil` when the session changed before the turn came (look again).
    private func lead<E: Error>(
        _ key: RefreshFlights<App.User>.Key,
        for session: UserSession<App.User>,
        account name: String?,
        expired: Bool,
        isolation: isolated (any Actor)?,
        at site: (fileID: StaticString, line: UInt),
        using refresh: (UserSession<App.User>) async throws(E) -> SessionRefresh<App.User>
    ) async throws(E) -> SessionRefreshOutcome? {
        // NB: a refresh that landed between reading the session and joining has already
        // replaced this token: refreshing it again would use it twice.
        let holdsToken = current.session(named: name)?.token == session.token
        // Other processes and stacks that share the saved session take turns too, and one that
        // refreshed while this one waited has saved the token it got.
        let shared = holdsToken ? sharedSessions() : nil
        let turn = await beginSharedRefresh(shared, account: App.accountID(of: session.user), token: session.token)
        let reader = readOnlySessions()
        var landing: Result<SessionRefresh<App.User>, any Error>?
        // NB: the lease is handed back only when the token wasn't sent, or its successor is
        // saved; otherwise it stays, naming the token, so that no one sends it again.
        var release = true
        defer {
            if case .held(let lease) = turn { shared?.lock.endRefresh(lease, release: release) }
            refreshes.land(key, with: landing)
        }
        switch turn {
        case .refused(let problem): return .refused(problem: .store(problem))
        case .spent:
            landing = .success(.ended)
            return await endUnconfirmed(session, because: .spentElsewhere, at: site)
        case .held, .unshared: break
        }
        let sessions = shared ?? reader
        let answer: SessionRefresh<App.User>
        // NB: and the stack may have moved on while it waited for its turn (signed out, say):
        // then it asks nothing (a signed-out session's token was sent, found by a test).
        let holdsNow = current.session(named: name)?.token == session.token
        let step = SessionMachine<App>.leadStep(
            holdsToken: (holdsToken, holdsNow), stored: storedAccount(of: session, in: sessions), refreshesTokens: reader == nil
        )
        switch step {
        case .stale: return nil
        case .movedOn: return .superseded
        case .waitForRotation: return .waitingForRotation
        case .waitForStore: return .awaitingToken
        case .takeStoredSignOut:
            if let sessions { takeStoredSessionIfChanged(in: sessions) }
            return .superseded
        case .adopt(let rotated): answer = rotated
        case .ask:
            release = false
            do throws(E) {
                answer = try await refresh(session)
            } catch {
                landing = .failure(error)
                release = SessionRefresh<App.User>.neverSent(error)
                // NB: a request that may have reached the server may have spent the token: the
                // session ends, and whoever waited hears it ended.
                if !release {
                    landing = .success(.ended)
                    _ = await endUnconfirmed(session, because: .answerLost, at: site)
                }
                throw error
            }
        }
        let taken = await take(answer, about: session, account: name, turn: turn, shared: shared, expired: expired, sent: !release, at: site)
        (landing, release) = (.success(taken.landing), taken.release)
        return taken.outcome
    }

    /// Takes `answer` about `session` once the lease `turn` (when held) is still this stack's,
    /// saves it, and says what the caller hears, what the flight lands with for the callers that
    /// waited, and whether the lease may be handed back (nothing was `sent`, or the successor is
    /// saved).
    private func take(
        _ answer: SessionRefresh<App.User>,
        about session: UserSession<App.User>,
        account name: String?,
        turn: SessionLock.Turn,
        shared: SessionStore<App>?,
        expired: Bool,
        sent: Bool,
        at site: (fileID: StaticString, line: UInt)
    ) async -> (outcome: SessionRefreshOutcome, landing: SessionRefresh<App.User>, release: Bool) {
        let sessions = shared ?? autosaveStore()
        let step = SessionMachine<App>.answerStep(
            answer,
            leaseLapsed: { if case .held(let lease) = turn { shared?.lock.holds(lease) != true } else { false } }(),
            stored: storedAccount(of: session, in: sessions)
        )
        switch step {
        case .endUnconfirmed(let reason):
            return (await endUnconfirmed(session, because: reason, at: site), .ended, false)
        case .takeStoredSignOut:
            if let sessions { takeStoredSessionIfChanged(in: sessions) }
            return (.superseded, .ended, !sent)
        case .apply(let answer):
            let outcome = apply(answer, to: session, expired: expired, joined: false, at: site)
            // The new token is on disk before anyone who waited for it resumes.
            await autosave.flush()
            guard let reason = SessionMachine<App>.unconfirmed(outcome, saveFailure: autosaveStore() == nil ? nil : autosave.lastFailure) else {
                return (outcome, answer, SessionMachine<App>.releasesLease(sent: sent, outcome: outcome))
            }
            let ended = await endUnconfirmed(current.session(named: name) ?? session, because: reason, at: site)
            return (ended, .ended, false)
        }
    }

    /// Ends `session` because its refresh may have spent its token without this stack keeping
    /// a new one, and saves that (with autosave on) before anyone who waited resumes.
    private func endUnconfirmed(
        _ session: UserSession<App.User>,
        because reason: RefreshUnconfirmed,
        at site: (fileID: StaticString, line: UInt)
    ) async -> SessionRefreshOutcome {
        _ = apply(.ended, to: session, expired: false, joined: false, at: site)
        await autosave.flush()
        return .endedUnconfirmed(reason)
    }

    /// The current session, refreshed first when its token has expired or expires within
    /// `margin`: what a request about to be signed needs.
    ///
    /// ```swift
    /// func authorizationHeader() async throws -> String? {
    ///     let session = try await appEnvironment.validSession { session in
    ///         .refreshed(token: try await api.refresh(session.token))
    ///     }
    ///     return session.map { "Bearer \($0.token.secret)" }
    /// }
    /// ```
    ///
    /// The refresh is `refreshSession(account:using:)`'s: requests that find the token
    /// expiring at the same time share one refresh. A token without an expiry date is never
    /// refreshed here; a `AuthState.restored` session that hasn't expired is returned as it is.
    /// A session `AuthState.awaitingToken` is completed from the autosave store when its token
    /// can be read; otherwise this returns `nil`.
    ///
    /// - Parameters:
    ///   - margin: How long before its expiry a token counts as expired; a minute by default.
    ///   - isolation: The actor `refresh` runs on; the caller's, by default.
    ///   - fileID: The calling file, recorded in the `FrameOrigin` of a frame a refresh makes.
    ///   - line: The calling line, recorded with it.
    ///   - refresh: Asks the server about the session.
    /// - Returns: The session after the refresh, if one was needed; `nil` when nobody is logged
    ///   in or the refresh ended the session.
    /// - Throws: Whatever `refresh` throws; the session has ended then, unless the error says the
    ///   request never left (see `refreshSession(account:using:)`).
    public func validSession<E: Error>(
        refreshingWithin margin: Duration = .seconds(60),
        isolation: isolated (any Actor)? = #isolation,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        using refresh: (UserSession<App.User>) async throws(E) -> SessionRefresh<App.User>
    ) async throws(E) -> UserSession<App.User>? {
        if case .completeToken = SessionMachine.refreshStep(current, account: nil, expecting: nil),
           !completeAwaitingToken(account: nil, at: (fileID, line)) { return nil }
        let environment = current
        guard case .join(let session) = SessionMachine.refreshStep(environment, account: nil, expecting: nil) else { return nil }
        let seconds = Double(margin.components.seconds) + Double(margin.components.attoseconds) / 1e18
        guard session.token.isExpired(at: environment.now().addingTimeInterval(seconds)) else { return session }
        _ = try await refreshSession(expecting: session.token, account: nil, isolation: isolation, at: (fileID, line), using: refresh)
        return current.session
    }

    /// The autosave store, when the calling task acts on the global stack and the store has a
    /// lock file beside which other processes and stacks take the refresh lease.
    private func sharedSessions() -> SessionStore<App>? {
        autosaveStore().flatMap { $0.lock.path == nil ? nil : $0 }
    }

    /// The autosave store, when the calling task acts on the global stack and the store leaves
    /// refreshing to another process (`refreshesTokens: false`).
    private func readOnlySessions() -> SessionStore<App>? {
        autosaveStore().flatMap { $0.refreshesTokens ? nil : $0 }
    }

    /// Waits for this stack's turn to refresh `token` of the account named `name` saved in
    /// `sessions`, after saving what autosave still has to save (so the others see this stack's
    /// token).
    private func beginSharedRefresh(_ sessions: SessionStore<App>?, account name: String, token: AuthToken) async -> SessionLock.Turn {
        guard let sessions else { return .unshared }
        await autosave.flush()
        return await sessions.lock.beginRefresh(for: name, token: SessionLock.fingerprint(of: token))
    }

    /// What `sessions` (`nil`: none shared) holds of `session`'s account now, in one load: the
    /// machine's reading (`SessionMachine.storedAccount(of:loaded:known:)`).
    private func storedAccount(of session: UserSession<App.User>, in sessions: SessionStore<App>?) -> SessionMachine<App>.StoredAccount {
        let loaded = sessions.map { sessions in Result { () throws(SnapshotError) in try sessions.load() } }
        return SessionMachine<App>.storedAccount(of: session, loaded: loaded, known: autosave.knowledge)
    }

    /// Reads the token of the account named `name` (the active one when `nil`), which waits for
    /// it, from the autosave store, when its secret store can be read again. Returns whether its
    /// wait is settled (``SessionMachine/tokenSettled(for:in:)``): it has its token, or is gone.
    private func completeAwaitingToken(account name: String?, at site: (fileID: StaticString, line: UInt)) -> Bool {
        guard let sessions = autosaveStore() else { return false }
        let loaded: SessionSnapshot<App>?
        do throws(SnapshotError) {
            loaded = try sessions.load()
        } catch {
            return false
        }
        guard SessionMachine<App>.tokenSettled(for: name, in: loaded?.accounts) else { return false }
        run(.tokenReadable(loaded?.session, others: loaded?.otherAccounts ?? []), fileID: site.fileID, line: site.line)
        return true
    }

    /// Applies a refresh's answer about `session` to the calling task's stack. A caller that
    /// `joined` another's refresh finds the answer already applied when both act on one stack.
    private func apply(
        _ answer: SessionRefresh<App.User>,
        to session: UserSession<App.User>,
        expired: Bool,
        joined: Bool,
        at site: (fileID: StaticString, line: UInt)
    ) -> SessionRefreshOutcome {
        guard let event = SessionMachine<App>.event(answering: answer, about: session.token) else { return .notSent }
        let outcome = run(event, fileID: site.fileID, line: site.line)
        return SessionMachine<App>.refreshOutcome(answer, outcome, expired: expired, joined: joined)
    }
}
