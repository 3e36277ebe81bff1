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
        let origin = FrameOrigin(.login, fileID: fileID, line: line)
        withActiveState { $0.update(origin) { _ = $0.applySessionEvent(.login(user, token)); return true } }
        didTransition()
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
        let origin = FrameOrigin(.logout, fileID: fileID, line: line)
        let committed = withActiveState { state in
            state.update(origin) { environment in
                ended = environment.session
                return environment.applySessionEvent(.logout).outcome.isApplied
            }
        }
        if committed { didTransition() }
        return committed ? ended : nil
    }

    /// Signs the current user out and saves that to `sessions` before returning, so the caller
    /// learns whether it reached the store.
    ///
    /// The token and every stray copy of it are removed first: when the snapshot can't be
    /// written after that (a read-only directory, a full disk), no relaunch restores the
    /// session, because a snapshot whose token is gone restores logged out. With autosave on,
    /// ``logout(fileID:line:)`` does the same on autosave's queue; this form is for a logout
    /// button that must say whether it worked.
    ///
    /// ```swift
    /// do {
    ///     try appEnvironment.logout(savingTo: sessions)
    /// } catch {
    ///     print("logged out here, but the store said: \(error)")
    /// }
    /// ```
    ///
    /// If another process (or another stack on the store) signed a different session in since
    /// this stack last saved or restored, that session is kept and this stack takes it (a
    /// ``EnvironmentChangeKind/storeChanged`` change): a stack that missed a change never undoes it.
    /// - Parameters:
    ///   - sessions: The store to save the logged-out state to.
    ///   - fileID: The calling file, recorded in the frame's ``FrameOrigin``.
    ///   - line: The calling line, recorded with it.
    /// - Returns: The session that ended, or `nil` when nobody was logged in.
    /// - Throws: ``SnapshotError/store(_:)`` when the store couldn't be written. This process is
    ///   logged out all the same. If the secret store refused to remove the token, a relaunch may
    ///   still restore the session: try again.
    @discardableResult
    public func logout(
        savingTo sessions: SessionStore<App>,
        fileID: StaticString = #fileID,
        line: UInt = #line
    ) throws(SnapshotError) -> UserSession<App.User>? {
        let ended = logout(fileID: fileID, line: line)
        try save(to: sessions)
        return ended
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
        let origin = FrameOrigin(.userUpdated, fileID: fileID, line: line)
        try withActiveState { (state) throws(SessionError) in
            try state.update(origin) { (environment) throws(SessionError) in
                if case .refused(let error) = environment.applySessionEvent(.updateUser(user)).outcome { throw error }
                return true
            }
        }
        didTransition()
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
        let origin = FrameOrigin(.userUpdated, fileID: fileID, line: line)
        try withActiveState { (state) throws(SessionError) in
            try state.update(origin) { (environment) throws(SessionError) in
                guard var user = environment.currentUser else { throw .notLoggedIn(operation: "updateCurrentUser") }
                change(&user)
                if case .refused(let error) = environment.applySessionEvent(.updateUser(user)).outcome { throw error }
                return true
            }
        }
        didTransition()
    }

    /// Replaces the configuration.
    /// - Parameters:
    ///   - config: The new configuration.
    ///   - fileID: The calling file, recorded in the frame's ``FrameOrigin``.
    ///   - line: The calling line, recorded with it.
    @inlinable
    public func updateConfig(_ config: App.Config, fileID: StaticString = #fileID, line: UInt = #line) {
        let origin = FrameOrigin(.configUpdated, fileID: fileID, line: line)
        withActiveState { $0.update(origin) { $0.config = config; return true } }
        didTransition()
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
        let origin = FrameOrigin(.configUpdated, fileID: fileID, line: line)
        withActiveState { state in
            state.update(origin) { environment in
                change(&environment.config)
                return true
            }
        }
        didTransition()
    }
}
