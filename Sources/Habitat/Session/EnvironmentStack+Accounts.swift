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
        let origin = FrameOrigin(.login, fileID: fileID, line: line)
        withActiveState { $0.update(origin) { _ = $0.applySessionEvent(.addAccount(user, token)); return true } }
        didTransition()
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
        let origin = FrameOrigin(.accountSwitched, fileID: fileID, line: line)
        let committed = try withActiveState { (state) throws(SessionError) in
            try state.update(origin) { (environment) throws(SessionError) in
                switch environment.applySessionEvent(.switchAccount(name)).outcome {
                case .refused(let error): throw error
                case let outcome: return outcome.isApplied
                }
            }
        }
        if committed { didTransition() }
    }

    /// Signs out the account named `name`, active or not; the other accounts stay signed in.
    ///
    /// When it was the active account, nobody is active afterwards
    /// (``HabitatEnvironment/session`` is `nil`) until the app switches to another account or
    /// signs one in: Habitat never picks the next account for the user. With autosave on, the
    /// save deletes the account's token first, then its ``SessionStore/accountData(for:)``.
    ///
    /// - Parameters:
    ///   - name: The account's name (``EnvironmentSchema/accountID(of:)``).
    ///   - fileID: The calling file, recorded in the frame's ``FrameOrigin``.
    ///   - line: The calling line, recorded with it.
    /// - Returns: The session that ended, or `nil` when no signed-in account has that name.
    @inlinable @discardableResult
    public func logout(account name: String, fileID: StaticString = #fileID, line: UInt = #line) -> UserSession<App.User>? {
        var ended: UserSession<App.User>?
        let origin = FrameOrigin(.logout, fileID: fileID, line: line)
        let committed = withActiveState { state in
            state.update(origin) { environment in
                ended = environment.accounts.first { App.isAccount($0.user, named: name) }
                return environment.applySessionEvent(.logoutAccount(name)).outcome.isApplied
            }
        }
        if committed { didTransition() }
        return committed ? ended : nil
    }

    /// Signs every account out, in one atomic step.
    /// - Parameters:
    ///   - fileID: The calling file, recorded in the frame's ``FrameOrigin``.
    ///   - line: The calling line, recorded with it.
    /// - Returns: The sessions that ended, the active one first; empty when nobody was signed in.
    @inlinable @discardableResult
    public func logoutAll(fileID: StaticString = #fileID, line: UInt = #line) -> [UserSession<App.User>] {
        var ended: [UserSession<App.User>] = []
        let origin = FrameOrigin(.logout, fileID: fileID, line: line)
        let committed = withActiveState { state in
            state.update(origin) { environment in
                ended = environment.accounts
                return environment.applySessionEvent(.logoutAll).outcome.isApplied
            }
        }
        if committed { didTransition() }
        return committed ? ended : []
    }
}

extension HabitatEnvironment {
    /// Every signed-in account: the active one (``session``) first, when there is one, then
    /// ``otherAccounts``.
    @inlinable
    public var accounts: [UserSession<App.User>] {
        guard let session else { return otherAccounts }
        return [session] + otherAccounts
    }

    /// The active account's name (``EnvironmentSchema/accountID(of:)``), or `nil` when no
    /// account is active.
    @inlinable
    public var activeAccountID: String? {
        session.map { App.accountID(of: $0.user) }
    }
}

extension EnvironmentChangeKind {
    /// Another signed-in account became the active one (see
    /// ``EnvironmentStack/switchAccount(to:fileID:line:)``).
    @inlinable public static var accountSwitched: Self { Self("accountSwitched") }
}
