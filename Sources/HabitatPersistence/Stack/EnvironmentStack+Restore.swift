import Foundation
public import Habitat

extension EnvironmentStack {
    /// Saves the current environment's session and configuration to `sessions`.
    ///
    /// - Parameter sessions: Where to save.
    /// - Throws: ``SnapshotError/store(_:)`` when a store fails; the stack is unchanged.
    public func save(to sessions: SessionStore<App>) throws(SnapshotError) {
        // In a test's scope, to the test's own storage (see `TestStorage`).
        if let storage = TestStorage<App>.current {
            let target = storage.resolve(sessions)
            let environment = current
            try target.save(environment)
            return storage.recordSave(to: target, of: environment)
        }
        try autosave.save({ current }, to: sessions) { stored, others, replacing in
            adoptStoredSession(stored, others: others, replacing: replacing)
        }
    }

    /// Restores a saved session and configuration into the current environment.
    ///
    /// The restored session is `AuthState.restored` until `refreshSession(account:using:)`
    /// confirms it; `SessionDependent` services receive its token. When the secret store
    /// can't be read, it is `AuthState.awaitingToken` instead (see
    /// ``SessionStore/load()``), and restoring again later completes it. When nothing was saved, the
    /// stack is unchanged. When the saved app was logged out, the configuration is restored and
    /// nobody is logged in. Observers see one change of kind `EnvironmentChangeKind.restore`.
    ///
    /// ```swift
    /// if let snapshot = try appEnvironment.restore(from: sessions),
    ///    let session = snapshot.session, session.isExpired(at: Date()) {
    ///     // show the login screen, or refresh first
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - sessions: Where to restore from.
    ///   - fileID: The calling file, recorded in the frame's `FrameOrigin`.
    ///   - line: The calling line, recorded with it.
    /// - Returns: What was restored, or `nil` when nothing was saved.
    /// - Throws: ``SnapshotError``; the stack and the stored data are unchanged then.
    @discardableResult
    public func restore(
        from sessions: SessionStore<App>,
        fileID: StaticString = #fileID,
        line: UInt = #line
    ) throws(SnapshotError) -> SessionSnapshot<App>? {
        // In a test's scope, from the test's own storage (see `TestStorage`).
        let storage = TestStorage<App>.current
        let snapshot: SessionSnapshot<App>?
        do throws(SnapshotError) {
            snapshot = try (storage?.resolve(sessions) ?? sessions).load()
        } catch {
            if storage == nil, SessionMachine<App>.guardsStore(after: error) { autosave.knowledge = KnownSession() }
            throw error
        }
        storage?.record(.restored(snapshot))
        guard let snapshot else {
            // NB: nothing saved is knowledge too: a save that finds another process's login since
            // merges with it instead of writing over it (the session explorer found a first save
            // signing out an account another process had signed in).
            if storage == nil { autosave.knowledge = KnownSession() }
            return nil
        }
        run(.restored(snapshot.accounts, config: snapshot.config), fileID: fileID, line: line)
        // NB: after the stack holds it (see `Autosave.save`); never a test's store.
        if storage == nil, let known = snapshot.known { autosave.knowledge = known }
        return snapshot
    }

    /// Signs the current user out and saves that to `sessions` before returning, so the caller
    /// learns whether it reached the store.
    ///
    /// The token and every stray copy of it are removed first: when the snapshot can't be
    /// written after that (a read-only directory, a full disk), no relaunch restores the
    /// session, because a snapshot whose token is gone restores logged out. With autosave on,
    /// `logout()` does the same on autosave's queue; this form is for a logout
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
    /// The accounts this stack held are signed out in the store too, whatever another process (or
    /// another stack on the store) did to them since this stack last saved or restored (a token
    /// rotated there, or the account signed in again: a logout is never undone by a change the
    /// user who tapped it couldn't see). An account signed in elsewhere that this stack never
    /// held is kept, and this stack takes it (a `EnvironmentChangeKind.storeChanged` change).
    /// - Parameters:
    ///   - sessions: The store to save the logged-out state to.
    ///   - fileID: The calling file, recorded in the frame's `FrameOrigin`.
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
}
