import Foundation

extension EnvironmentStack {
    /// Confirms the current session with the server, or ends it; concurrent calls share one
    /// request.
    ///
    /// `refresh` receives the current session (typically ``AuthState/restored`` after a launch)
    /// and returns a new token, optionally with fresh user data, or says the session is gone.
    /// The stack then becomes ``AuthState/authenticated`` with the new token, or logs out. If
    /// the session changed while `refresh` ran (the user logged out or someone else logged
    /// in), the result is dropped and ``SessionRefreshOutcome/superseded`` returned.
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
    /// before any of them resumes. When the leading `refresh` throws, the waiting calls throw
    /// the same error if their own `refresh` could throw it; otherwise (and when the leader was
    /// cancelled) the next one refreshes. A waiting call that is cancelled keeps waiting: the
    /// request it shares goes on for the others.
    ///
    /// **Across processes.** With autosave on, stacks and processes that save to the same
    /// session store take turns too, on a lock file beside it (``SessionStore/lockFile``). The
    /// one whose turn it is re-reads the store first, and when another refreshed meanwhile, it
    /// takes the token that one saved instead of calling `refresh`.
    ///
    /// A session ``AuthState/awaitingToken`` is completed from the autosave store first; while
    /// its token still can't be read, nothing is asked and the outcome is
    /// ``SessionRefreshOutcome/awaitingToken``.
    ///
    /// **Saving.** With autosave on, a new token that could not be saved (a locked secret store)
    /// gives ``SessionRefreshOutcome/refreshedNotSaved(problem:)``: it is in use, and saved with
    /// the next change or at ``protectedDataDidBecomeAvailable(for:fileID:line:)``.
    ///
    /// **Extensions.** When the autosave store was made with `refreshesTokens: false` (an app
    /// extension's), `refresh` is never called: the outcome is ``SessionRefreshOutcome/refreshed``
    /// once the app has saved a newer token, ``SessionRefreshOutcome/waitingForRotation`` until
    /// then.
    ///
    /// `refresh` runs on the caller's actor, so a `@MainActor` view model can pass a closure
    /// that touches its own state.
    ///
    /// - Parameters:
    ///   - isolation: The actor `refresh` runs on; the caller's, by default.
    ///   - fileID: The calling file, recorded in the frame's ``FrameOrigin``.
    ///   - line: The calling line, recorded with it.
    ///   - refresh: Asks the server about the session.
    /// - Returns: What happened.
    /// - Throws: Whatever `refresh` throws (this call's, or the one it waited for); the stack is
    ///   unchanged then.
    public func refreshSession<E: Error>(
        isolation: isolated (any Actor)? = #isolation,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        using refresh: (UserSession<App.User>) async throws(E) -> SessionRefresh<App.User>
    ) async throws(E) -> SessionRefreshOutcome {
        try await refreshSession(expecting: nil, account: nil, isolation: isolation, at: (fileID, line), using: refresh)
    }

    /// Confirms the session of the signed-in account named `name` with the server, or ends it,
    /// as ``refreshSession(isolation:fileID:line:using:)`` does for the active account: one
    /// request per account at a time, in this process and across the processes sharing the
    /// autosave store.
    ///
    /// The account need not be the active one: a background refresh renews an account the user
    /// isn't looking at, and the active session is never touched. When the account is switched
    /// away from while `refresh` runs, the new token goes to that account, wherever it is now;
    /// when it was signed out meanwhile, the answer is dropped and the outcome is
    /// ``SessionRefreshOutcome/superseded``.
    ///
    /// ```swift
    /// for account in appEnvironment.current.otherAccounts where account.isExpired(at: .now) {
    ///     _ = try await appEnvironment.refreshSession(account: "\(account.user.id)") { session in
    ///         .refreshed(token: try await api.refresh(session.token))
    ///     }
    /// }
    /// ```
    /// - Parameters:
    ///   - name: The account's name (``EnvironmentSchema/accountID(of:)``).
    ///   - isolation: The actor `refresh` runs on; the caller's, by default.
    ///   - fileID: The calling file, recorded in the frame's ``FrameOrigin``.
    ///   - line: The calling line, recorded with it.
    ///   - refresh: Asks the server about the session.
    /// - Returns: What happened; ``SessionRefreshOutcome/notLoggedIn`` when no signed-in account
    ///   has that name.
    /// - Throws: Whatever `refresh` throws; the stack is unchanged then.
    public func refreshSession<E: Error>(
        account name: String,
        isolation: isolated (any Actor)? = #isolation,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        using refresh: (UserSession<App.User>) async throws(E) -> SessionRefresh<App.User>
    ) async throws(E) -> SessionRefreshOutcome {
        try await refreshSession(expecting: nil, account: name, isolation: isolation, at: (fileID, line), using: refresh)
    }

    /// ``refreshSession(isolation:fileID:line:using:)``, but only while the session's token is
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
        let pick: (HabitatEnvironment<App>) -> UserSession<App.User>? = { environment in
            guard let name else { return environment.session }
            return environment.accounts.first { App.isAccount($0.user, named: name) }
        }
        while true {
            guard let session = pick(current) else { return .notLoggedIn }
            if session.state == .awaitingToken {
                guard completeAwaitingToken(at: site) else { return .awaitingToken }
                continue
            }
            if let expected, session.token != expected { return .superseded }
            let expired = session.isExpired(at: current.now())
            let key = RefreshFlights.Key<App.User>(state: withActiveState { ObjectIdentifier($0) }, token: session.token.secret)
            switch await RefreshFlights.shared.join(key) {
            case .lead:
                // NB: a refresh that landed between reading the session and joining has already
                // replaced this token: refreshing it again would use it twice.
                guard pick(current)?.token == session.token else {
                    RefreshFlights.shared.land(key, with: nil)
                    continue
                }
                // Other processes and stacks that share the saved session take turns too, and
                // one that refreshed while this one waited has saved the token it got.
                let shared = sharedSessions()
                let turn = await beginSharedRefresh(shared, account: App.accountID(of: session.user))
                let answer: SessionRefresh<App.User>
                let reader = readOnlySessions()
                if let rotated = rotatedToken(in: shared ?? reader, replacing: session) {
                    answer = rotated
                } else if reader != nil {
                    // An extension leaves rotating to the app: it only takes what the app saved.
                    shared?.lock.endRefresh(turn)
                    RefreshFlights.shared.land(key, with: nil)
                    return .waitingForRotation
                } else {
                    do throws(E) {
                        answer = try await refresh(session)
                    } catch {
                        shared?.lock.endRefresh(turn)
                        RefreshFlights.shared.land(key, with: .failure(error))
                        throw error
                    }
                }
                var outcome = apply(answer, to: session, expired: expired, joined: false, at: site)
                // The new token is on disk before anyone who waited for it resumes.
                await autosave.flush()
                if outcome == .refreshed, scopedStateUnretained() == nil, let problem = autosave.lastFailure {
                    outcome = .refreshedNotSaved(problem: problem)
                }
                shared?.lock.endRefresh(turn)
                RefreshFlights.shared.land(key, with: .success(answer))
                return outcome
            case .answer(.success(let answer)):
                return apply(answer, to: session, expired: expired, joined: true, at: site)
            case .stale:
                continue
            case .answer(.failure(let error)):
                if !(error is CancellationError), let error = error as? E { throw error }
                // The leader was cancelled, or failed in a way this caller's `refresh` can't
                // report: the next caller leads.
                continue
            }
        }
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
    /// The refresh is ``refreshSession(isolation:fileID:line:using:)``'s: requests that find the token
    /// expiring at the same time share one refresh. A token without an expiry date is never
    /// refreshed here; a ``AuthState/restored`` session that hasn't expired is returned as it is.
    /// A session ``AuthState/awaitingToken`` is completed from the autosave store when its token
    /// can be read; otherwise this returns `nil`.
    ///
    /// - Parameters:
    ///   - margin: How long before its expiry a token counts as expired; a minute by default.
    ///   - isolation: The actor `refresh` runs on; the caller's, by default.
    ///   - fileID: The calling file, recorded in the ``FrameOrigin`` of a frame a refresh makes.
    ///   - line: The calling line, recorded with it.
    ///   - refresh: Asks the server about the session.
    /// - Returns: The session after the refresh, if one was needed; `nil` when nobody is logged
    ///   in or the refresh ended the session.
    /// - Throws: Whatever `refresh` throws; the stack is unchanged then.
    public func validSession<E: Error>(
        refreshingWithin margin: Duration = .seconds(60),
        isolation: isolated (any Actor)? = #isolation,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        using refresh: (UserSession<App.User>) async throws(E) -> SessionRefresh<App.User>
    ) async throws(E) -> UserSession<App.User>? {
        var environment = current
        guard var session = environment.session else { return nil }
        if session.state == .awaitingToken {
            guard completeAwaitingToken(at: (fileID, line)) else { return nil }
            environment = current
            guard let completed = environment.session, completed.state != .awaitingToken else { return nil }
            session = completed
        }
        let seconds = Double(margin.components.seconds) + Double(margin.components.attoseconds) / 1e18
        guard session.token.isExpired(at: environment.now().addingTimeInterval(seconds)) else { return session }
        _ = try await refreshSession(expecting: session.token, account: nil, isolation: isolation, at: (fileID, line), using: refresh)
        return current.session
    }

    /// The autosave store, when the calling task acts on the global stack and the store has a
    /// lock file beside which other processes and stacks take the refresh lease.
    private func sharedSessions() -> SessionStore<App>? {
        guard scopedStateUnretained() == nil, let sessions = autosave.sessions, sessions.lock.refreshPath != nil else {
            return nil
        }
        return sessions
    }

    /// The autosave store, when the calling task acts on the global stack and the store leaves
    /// refreshing to another process (`refreshesTokens: false`).
    private func readOnlySessions() -> SessionStore<App>? {
        guard scopedStateUnretained() == nil, let sessions = autosave.sessions, !sessions.refreshesTokens else { return nil }
        return sessions
    }

    /// Waits for this stack's turn to refresh the account named `name` saved in `sessions`,
    /// after saving what autosave still has to save (so the others see this stack's token).
    private func beginSharedRefresh(_ sessions: SessionStore<App>?, account name: String) async -> SessionLock.Lease? {
        guard let sessions else { return nil }
        await autosave.flush()
        return await sessions.lock.beginRefresh(for: name)
    }

    /// The token that another process or stack sharing `sessions` saved in place of
    /// `session`'s while this one waited for its turn, as a refresh's answer; `nil` when the
    /// store still holds `session`'s token, or holds no usable one.
    ///
    /// NB: a session that is gone from the store is not taken as ended: the server decides that.
    private func rotatedToken(in sessions: SessionStore<App>?, replacing session: UserSession<App.User>) -> SessionRefresh<App.User>? {
        let name = App.accountID(of: session.user)
        guard let sessions, let snapshot = (try? sessions.load()) ?? nil,
              let stored = ([snapshot.session].compactMap { $0 } + snapshot.otherAccounts).first(where: { App.accountID(of: $0.user) == name }),
              stored.state != .awaitingToken, stored.token.secret != session.token.secret
        else { return nil }
        return .refreshed(token: stored.token, user: stored.user)
    }

    /// Reads the token of a session ``AuthState/awaitingToken`` from the autosave store, when
    /// its secret store can be read again. Returns whether the session has its token now.
    private func completeAwaitingToken(at site: (fileID: StaticString, line: UInt)) -> Bool {
        guard scopedStateUnretained() == nil, let sessions = autosave.sessions,
              let snapshot = (try? sessions.load()) ?? nil, snapshot.tokenRead == .present, let loaded = snapshot.session,
              snapshot.otherAccounts.allSatisfy({ $0.state != .awaitingToken })
        else { return false }
        _ = settleAwaitingSession(loaded, others: snapshot.otherAccounts, origin: FrameOrigin(.restore, at: site))
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
        var outcome = SessionRefreshOutcome.superseded
        let committed = withActiveState { state in
            switch answer {
            case .refreshed(let token, let user):
                state.update(FrameOrigin(.refresh, at: site)) { environment in
                    // NB: a write may run its change again on a newer top; decide afresh.
                    switch environment.applySessionEvent(.refreshed(from: session.token, to: token, user: user)).outcome {
                    case .applied:
                        outcome = .refreshed
                        return true
                    case .unchanged:
                        // Another caller of this refresh applied the token already.
                        outcome = .refreshed
                        return false
                    case .superseded, .refused:
                        outcome = .superseded
                        return false
                    }
                }
            case .ended:
                state.update(FrameOrigin(.logout, at: site)) { environment in
                    switch environment.applySessionEvent(.refreshEnded(from: session.token)).outcome {
                    case .applied:
                        outcome = .ended(expired: expired)
                        return true
                    case .unchanged:
                        // Signed out already: by the leader of this refresh, or by someone else.
                        outcome = joined ? .ended(expired: expired) : .superseded
                        return false
                    case .superseded, .refused:
                        outcome = .superseded
                        return false
                    }
                }
            }
        }
        if committed { didTransition() }
        return outcome
    }
}

extension FrameOrigin {
    /// The origin of a frame a refresh makes, at the caller's `site`.
    fileprivate init(_ operation: EnvironmentChangeKind, at site: (fileID: StaticString, line: UInt)) {
        self.init(operation, fileID: site.fileID, line: site.line)
    }
}
