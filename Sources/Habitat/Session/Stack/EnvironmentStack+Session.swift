extension EnvironmentStack {
    /// Signs `user` in, replacing the current environment in one atomic step.
    ///
    /// The new session is ``AuthState/authenticated``. Services that conform to
    /// ``SessionDependent`` receive the new session in the same step. Logging in while another user is
    /// logged in replaces that user's session; the change's `old` environment shows who was signed
    /// in before. Accounts signed in beside the active one (``HabitatEnvironment/otherAccounts``)
    /// stay signed in; to sign another account in without signing the active one out, use
    /// ``addAccount(user:token:fileID:line:)``.
    ///
    /// ```swift
    /// appEnvironment.login(user: account, token: AuthToken("s3cr3t"))
    /// ```
    /// - Parameters:
    ///   - user: The user who signed in.
    ///   - token: The user's credential.
    ///   - fileID: The calling file, recorded in the frame's ``FrameOrigin``.
    ///   - line: The calling line, recorded with it.
    @inlinable
    public func login(user: App.User, token: AuthToken, fileID: StaticString = #fileID, line: UInt = #line) {
        run(.login(user, token), fileID: fileID, line: line)
    }

    /// Signs the current user out, replacing the current environment in one atomic step.
    ///
    /// ``SessionDependent`` services are told nobody is signed in. Logging out while nobody is
    /// logged in changes nothing and publishes no change. Other signed-in accounts
    /// (``HabitatEnvironment/otherAccounts``) stay signed in, none of them active;
    /// ``logoutAll(fileID:line:)`` signs them all out.
    ///
    /// - Parameters:
    ///   - fileID: The calling file, recorded in the frame's ``FrameOrigin``.
    ///   - line: The calling line, recorded with it.
    /// - Returns: The session that ended, or `nil` when nobody was logged in.
    @inlinable @discardableResult
    public func logout(fileID: StaticString = #fileID, line: UInt = #line) -> UserSession<App.User>? {
        var ended: UserSession<App.User>?
        let outcome = run(.logout, fileID: fileID, line: line) { ended = $0.session }
        return outcome.isApplied ? ended : nil
    }

    /// Replaces the signed-in user's data, keeping the token and the auth state.
    ///
    /// - Parameters:
    ///   - user: The updated user.
    ///   - fileID: The calling file, recorded in the frame's ``FrameOrigin``.
    ///   - line: The calling line, recorded with it.
    /// - Throws: ``SessionError/notLoggedIn(operation:)`` when nobody is logged in; the stack
    ///   is unchanged then.
    @inlinable
    public func updateCurrentUser(_ user: App.User, fileID: StaticString = #fileID, line: UInt = #line) throws(SessionError) {
        try updateCurrentUser(fileID: fileID, line: line) { $0 = user }
    }

    /// Changes the signed-in user's data in place, atomically.
    ///
    /// ```swift
    /// try appEnvironment.updateCurrentUser { $0.displayName = "Ada" }
    /// ```
    /// - Parameters:
    ///   - fileID: The calling file, recorded in the frame's ``FrameOrigin``.
    ///   - line: The calling line, recorded with it.
    ///   - change: Changes a copy of the current user.
    /// - Throws: ``SessionError/notLoggedIn(operation:)`` when nobody is logged in; the stack
    ///   is unchanged then.
    @inlinable
    public func updateCurrentUser(
        fileID: StaticString = #fileID,
        line: UInt = #line,
        _ change: (inout App.User) -> Void
    ) throws(SessionError) {
        let outcome = withoutActuallyEscaping(change) { run(.updateUser($0), fileID: fileID, line: line) }
        if case .refused(let error) = outcome { throw error }
    }

    /// Replaces the configuration.
    /// - Parameters:
    ///   - config: The new configuration.
    ///   - fileID: The calling file, recorded in the frame's ``FrameOrigin``.
    ///   - line: The calling line, recorded with it.
    @inlinable
    public func updateConfig(_ config: App.Config, fileID: StaticString = #fileID, line: UInt = #line) {
        updateConfig(fileID: fileID, line: line) { $0 = config }
    }

    /// Changes the configuration in place, atomically.
    ///
    /// ```swift
    /// appEnvironment.updateConfig { $0.features.insert("new-onboarding") }
    /// ```
    /// - Parameters:
    ///   - fileID: The calling file, recorded in the frame's ``FrameOrigin``.
    ///   - line: The calling line, recorded with it.
    ///   - change: Changes a copy of the current configuration.
    @inlinable
    public func updateConfig(fileID: StaticString = #fileID, line: UInt = #line, _ change: (inout App.Config) -> Void) {
        withoutActuallyEscaping(change) { _ = run(.updateConfig($0), fileID: fileID, line: line) }
    }
}

// Several accounts signed in side by side, one of them active: the transitions that add, switch
// and sign out accounts. Each is one atomic update of the stack, like `login`: readers, services
// and the change stream see the new active account in one step, never one account's user with
// another's token.
//
// NB: inlinable, as `login` is: unspecialised, the transition looks up generic metadata at
// every step, and a switch measured 15x a login.

extension EnvironmentStack {
    /// Signs `user` in beside the accounts already signed in, and makes it the active account.
    ///
    /// The account that was active joins ``HabitatEnvironment/otherAccounts`` with its token
    /// and state, signed in still; ``login(user:token:fileID:line:)``, by contrast, replaces it.
    /// Signing in an account that is already signed in (the same
    /// ``EnvironmentSchema/accountID(of:)``) replaces that account's session with the new one.
    ///
    /// ```swift
    /// appEnvironment.addAccount(user: work, token: workToken)   // ada stays signed in
    /// try appEnvironment.switchAccount(to: "ada")
    /// ```
    /// - Parameters:
    ///   - user: The user who signed in.
    ///   - token: The user's credential.
    ///   - fileID: The calling file, recorded in the frame's ``FrameOrigin``.
    ///   - line: The calling line, recorded with it.
    @inlinable
    public func addAccount(user: App.User, token: AuthToken, fileID: StaticString = #fileID, line: UInt = #line) {
        run(.addAccount(user, token), fileID: fileID, line: line)
    }

    /// Makes the signed-in account named `name` the active one, in one atomic step.
    ///
    /// The account that was active takes the switched-to account's place in
    /// ``HabitatEnvironment/otherAccounts``; each keeps its token and state. ``SessionDependent`` services receive the new session in the same step,
    /// and observers see one change of kind ``EnvironmentChangeKind/accountSwitched``. Switching
    /// to the active account changes nothing.
    ///
    /// - Parameters:
    ///   - name: The account's name (``EnvironmentSchema/accountID(of:)``: the user's `id` for an
    ///     `Identifiable` user).
    ///   - fileID: The calling file, recorded in the frame's ``FrameOrigin``.
    ///   - line: The calling line, recorded with it.
    /// - Throws: ``SessionError/unknownAccount(_:operation:)`` when no signed-in account has that
    ///   name; the stack is unchanged then.
    @inlinable
    public func switchAccount(to name: String, fileID: StaticString = #fileID, line: UInt = #line) throws(SessionError) {
        if case .refused(let error) = run(.switchAccount(name), fileID: fileID, line: line) { throw error }
    }

    /// Signs out the account named `name`, active or not; the other accounts stay signed in.
    ///
    /// When it was the active account, nobody is active afterwards
    /// (``HabitatEnvironment/session`` is `nil`) until the app switches to another account or
    /// signs one in: Habitat never picks the next account for the user. With autosave on, the
    /// save deletes the account's token first, then its `SessionStore.accountData(for:)`.
    ///
    /// - Parameters:
    ///   - name: The account's name (``EnvironmentSchema/accountID(of:)``).
    ///   - fileID: The calling file, recorded in the frame's ``FrameOrigin``.
    ///   - line: The calling line, recorded with it.
    /// - Returns: The session that ended, or `nil` when no signed-in account has that name.
    @inlinable @discardableResult
    public func logout(account name: String, fileID: StaticString = #fileID, line: UInt = #line) -> UserSession<App.User>? {
        var ended: UserSession<App.User>?
        let outcome = run(.logoutAccount(name), fileID: fileID, line: line) { ended = $0.session(named: name) }
        return outcome.isApplied ? ended : nil
    }

    /// Signs every account out, in one atomic step.
    /// - Parameters:
    ///   - fileID: The calling file, recorded in the frame's ``FrameOrigin``.
    ///   - line: The calling line, recorded with it.
    /// - Returns: The sessions that ended, the active one first; empty when nobody was signed in.
    @inlinable @discardableResult
    public func logoutAll(fileID: StaticString = #fileID, line: UInt = #line) -> [UserSession<App.User>] {
        var ended: [UserSession<App.User>] = []
        let outcome = run(.logoutAll, fileID: fileID, line: line) { ended = $0.accounts }
        return outcome.isApplied ? ended : []
    }
}

extension HabitatEnvironment {
    /// Every signed-in account: the active one (``session``) first, when there is one, then
    /// ``otherAccounts``.
    @inlinable
    public var accounts: [UserSession<App.User>] {
        allSessions
    }

    /// The active account's name (``EnvironmentSchema/accountID(of:)``), or `nil`.
    package var activeAccountID: String? {
        session.map { App.accountID(of: $0.user) }
    }
}

extension EnvironmentChangeKind {
    /// Another signed-in account became the active one (see
    /// ``EnvironmentStack/switchAccount(to:fileID:line:)``).
    @inlinable public static var accountSwitched: Self { Self("accountSwitched") }
    /// A signed-in account that isn't the active one signed out
    /// (``EnvironmentStack/logout(account:fileID:line:)``), or its session ended (its refresh
    /// was refused): the active session, and what the screens show, stay. ``logout`` is published
    /// only when the active account's session ends.
    @inlinable public static var accountSignedOut: Self { Self("accountSignedOut") }
}

extension EnvironmentStack {
    /// The one driver: runs `event` through the ``SessionMachine`` on the calling task's stack,
    /// in one atomic update that publishes the row's change when the state moved, then asks
    /// autosave to write when the row says so. `inspect` reads the environment the event moves
    /// (NB: `inout` only so that it isn't copied: it must not change it).
    @inlinable @discardableResult
    package func run(
        _ event: SessionMachine<App>.Event,
        fileID: StaticString,
        line: UInt,
        inspecting inspect: (inout HabitatEnvironment<App>) -> Void = { _ in }
    ) -> SessionMachine<App>.Outcome {
        withActiveState { run(event, on: $0, fileID: fileID, line: line, inspecting: inspect) }
    }

    /// ``run(_:fileID:line:inspecting:)`` on `state`.
    @inlinable @discardableResult
    package func run(
        _ event: SessionMachine<App>.Event,
        on state: StackState<App>,
        fileID: StaticString,
        line: UInt,
        inspecting inspect: (inout HabitatEnvironment<App>) -> Void = { _ in }
    ) -> SessionMachine<App>.Outcome {
        let row = SessionMachine.row(event)
        var outcome = SessionMachine<App>.Outcome.unchanged
        // NB: what a few events publish depends on the state (another account's end is not a
        // `.logout`): a write whose state decides another kind than its frame's is declined,
        // and written again with that kind.
        let decidesByState = SessionMachine.decidesByState(event)
        var kind = row.publishes
        var again = true
        while again {
            again = false
            state.update(FrameOrigin(kind, fileID: fileID, line: line)) { environment in
                // NB: a write may run its change again on a newer top; each run decides afresh.
                inspect(&environment)
                if decidesByState {
                    let decided = SessionMachine.publishes(event, in: environment)
                    if decided != kind {
                        kind = decided
                        again = true
                        return false
                    }
                }
                outcome = SessionMachine.transition(event, &environment)
                return outcome.isApplied
            }
        }
        if outcome.isApplied, row.saves { didTransition() }
        return outcome
    }
}
