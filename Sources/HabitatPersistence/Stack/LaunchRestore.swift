import Foundation
public import Habitat

extension EnvironmentStack {
    /// Restores the saved session and configuration at launch, and says what happened instead
    /// of throwing: an app needs no `do`/`catch` to stay alive when the store is damaged.
    ///
    /// ```swift
    /// let launch = appEnvironment.restoreAtLaunch(from: sessions)
    /// if let problem = launch.problem {
    ///     log("starting logged out: \(problem.localizedDescription)")
    /// }
    /// ```
    ///
    /// What `restore(from:)` restores, it restores. When the secret store can't be read right
    /// now, the user's data is restored and the session waits for its token
    /// (``LaunchRestore/awaitingToken(_:problem:)``); nothing is deleted, and restoring again
    /// later completes it. When it can't restore at all, the stack stays as it was
    /// (usually logged out, with the default configuration), and nothing is deleted: a damaged
    /// file store has been moved aside (``LaunchRestore/setAside(movedTo:problem:)``), and any
    /// other problem (a newer version, an unreadable store) leaves the stored data untouched
    /// for a later launch or a newer app (``LaunchRestore/failed(_:)``).
    ///
    /// - Parameters:
    ///   - sessions: Where to restore from.
    ///   - fileID: The calling file, recorded in the restored frame's `FrameOrigin`.
    ///   - line: The calling line, recorded with it.
    /// - Returns: What the launch found.
    @discardableResult
    public func restoreAtLaunch(
        from sessions: SessionStore<App>,
        fileID: StaticString = #fileID,
        line: UInt = #line
    ) -> LaunchRestore<App> {
        do throws(SnapshotError) {
            return SessionMachine.launchAnswer(try restore(from: sessions, fileID: fileID, line: line))
        } catch {
            return SessionMachine.launchAnswer(failure: error)
        }
    }
}

/// What ``Habitat/EnvironmentStack/restoreAtLaunch(from:fileID:line:)`` found.
///
/// `print(launch)` gives one line that names no user data: `restored a session (restored)`,
/// `restored, logged out`, `nothing saved`, `awaiting the token: ...`, `set aside: ...` (the problem names the file and where the bad copy was kept),
/// `failed: ...`.
public enum LaunchRestore<App: EnvironmentSchema>: Sendable, CustomStringConvertible {
    /// The saved session is back, `AuthState.restored` until a refresh, with the saved
    /// configuration.
    case restored(SessionSnapshot<App>)
    /// The saved configuration is back, with nobody signed in: the last run logged out, or the
    /// stored token was damaged (`problem` says so, and the damaged token is left in place).
    case restoredLoggedOut(SessionSnapshot<App>)
    /// The saved state is back, but the secret store couldn't be read, or couldn't be trusted to
    /// say "not found" yet (`problem` says why): the session is `AuthState.awaitingToken`,
    /// with the user's data and no token yet, and nothing is written or deleted. Call
    /// ``Habitat/EnvironmentStack/protectedDataDidBecomeAvailable(for:fileID:line:)`` when the secret
    /// store is readable (on Apple platforms, when protected data becomes available).
    case awaitingToken(SessionSnapshot<App>, problem: SnapshotError)
    /// Nothing was saved: a first launch, or the store was cleared.
    case nothingSaved
    /// The store's file was damaged; it was moved to `movedTo` (for a bug report) and the app
    /// starts as if nothing was saved.
    case setAside(movedTo: String, problem: SnapshotError)
    /// The saved state could not be restored and was left as it is: written by a newer version
    /// of the app, unreadable right now, or not a valid snapshot. A newer version's snapshot is
    /// never written over: the stack's saves throw ``SnapshotError/unsupportedVersion(key:found:newest:)``
    /// until the app calls ``SessionStore/clear()`` to start over (a downgrade destroys nothing).
    /// Otherwise the next save overwrites it with the stack's state: retry the restore before
    /// enabling autosave when the saved session may still be good.
    case failed(SnapshotError)

    /// One line for logs, without any user data.
    public var description: String {
        switch self {
        case .restored(let snapshot): "restored a session (\(snapshot.session?.state.rawValue ?? "-"))"
        case .restoredLoggedOut(let snapshot): "restored, logged out" + (snapshot.tokenProblem.map { ": \($0.localizedDescription)" } ?? "")
        case .nothingSaved: "nothing saved"
        case .awaitingToken(_, let problem): "awaiting the token: \(problem.localizedDescription)"
        // NB: the problem names the file and its set-aside copy already.
        case .setAside(_, let problem): "set aside: \(problem.localizedDescription)"
        case .failed(let problem): "failed: \(problem.localizedDescription)"
        }
    }

    /// What went wrong, if anything did: `nil` after `nothingSaved`, and after
    /// `restored(_:)` or `restoredLoggedOut(_:)` unless the stored token was damaged (the snapshot's
    /// ``SessionSnapshot/tokenProblem``: the app starts logged out and the damaged token is left
    /// in place).
    public var problem: SnapshotError? {
        switch self {
        case .restored(let snapshot), .restoredLoggedOut(let snapshot): snapshot.tokenProblem.map { .store($0) }
        case .nothingSaved: nil
        case .awaitingToken(_, let problem), .setAside(_, let problem), .failed(let problem): problem
        }
    }

    /// The restored snapshot, if any (after `restored(_:)` and `awaitingToken(_:problem:)`).
    public var snapshot: SessionSnapshot<App>? {
        switch self {
        case .restored(let snapshot), .restoredLoggedOut(let snapshot), .awaitingToken(let snapshot, _): snapshot
        case .nothingSaved, .setAside, .failed: nil
        }
    }
}

extension EnvironmentStack {
    /// Tells the stack that its secret store can be read now, and decides a session that was
    /// waiting for its token.
    ///
    /// Call it when protected data becomes available: on iOS, from
    /// `UIApplication.protectedDataDidBecomeAvailableNotification`, and right after
    /// `restoreAtLaunch(from:)` when `UIApplication.shared.isProtectedDataAvailable`
    /// is already true; on platforms without data protection, right after the restore.
    ///
    /// ```swift
    /// let launch = appEnvironment.restoreAtLaunch(from: sessions)
    /// appEnvironment.enableAutosave(to: sessions)
    /// // Later, once the device is unlocked:
    /// appEnvironment.protectedDataDidBecomeAvailable(for: sessions)
    /// ```
    ///
    /// A session `AuthState.awaitingToken` is read again, now taking "not found" as final: it
    /// becomes `AuthState.restored` with its token, or, when the secret store holds no token
    /// for it, the stack logs out (and autosave, when on, then saves that). Only the session
    /// changes; configuration changes made while it waited stay. A save that autosave could not
    /// make while the store was locked (a refreshed token, say) is made again. With no session
    /// waiting, the store is read once with final reads, so that a token no saved snapshot names
    /// (one a Keychain kept through a reinstall) is discarded (see
    /// ``SessionStore/discardsUnpairedSecrets``).
    ///
    /// - Parameters:
    ///   - sessions: Where the session was restored from.
    ///   - fileID: The calling file, recorded in the frame's `FrameOrigin`.
    ///   - line: The calling line, recorded with it.
    /// - Returns: What became of the waiting session.
    @discardableResult
    public func protectedDataDidBecomeAvailable(
        for sessions: SessionStore<App>,
        fileID: StaticString = #fileID,
        line: UInt = #line
    ) -> AwaitingTokenResolution {
        defer { autosave.retryFailedSave() }
        // NB: read with final reads even when no session waits: a token no snapshot names (one a
        // reinstall left) is judged now.
        let loaded = Result { () throws(SnapshotError) in try sessions.load(secretsReadable: true) }
        let snapshot: SessionSnapshot<App>?
        switch SessionMachine.unlockStep(current, loaded: loaded) {
        case .answer(let answer): return answer
        case .take(let taken): snapshot = taken
        }
        let applied = run(.tokenReadable(snapshot?.session, others: snapshot?.otherAccounts ?? []), fileID: fileID, line: line).isApplied
        return SessionMachine.unlockAnswer(snapshot, applied: applied)
    }
}

/// What ``Habitat/EnvironmentStack/protectedDataDidBecomeAvailable(for:fileID:line:)`` did with a session
/// that was waiting for its token.
public enum AwaitingTokenResolution: Sendable, Hashable {
    /// The token was read: the session is `AuthState.restored`.
    case restored
    /// The secret store holds no token for the saved session (or a damaged one: `problem`), or
    /// nothing is saved any more: the stack logged out.
    case loggedOut(problem: StoreError?)
    /// The secret store still can't be read (`problem` says why): the session keeps waiting,
    /// and nothing was written.
    case stillAwaiting(SnapshotError)
    /// No session was waiting for its token: nothing changed.
    case notAwaiting
}
