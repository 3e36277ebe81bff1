extension EnvironmentStack {
    /// Restores the saved session and configuration at launch, and says what happened instead
    /// of throwing: an app needs no `do`/`catch` to stay alive when the store is damaged.
    ///
    /// ```swift
    /// let launch = AppEnvironment.restoreAtLaunch(from: sessions)
    /// if let problem = launch.problem {
    ///     log("starting logged out: \(problem.localizedDescription)")
    /// }
    /// ```
    ///
    /// What ``restore(from:fileID:line:)`` restores, it restores. When the secret store can't be read right
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
    ///   - fileID: The calling file, recorded in the restored frame's ``FrameOrigin``.
    ///   - line: The calling line, recorded with it.
    /// - Returns: What the launch found.
    @discardableResult
    public func restoreAtLaunch(
        from sessions: SessionStore<App>,
        fileID: StaticString = #fileID,
        line: UInt = #line
    ) -> LaunchRestore<App> {
        do throws(SnapshotError) {
            guard let snapshot = try restore(from: sessions, fileID: fileID, line: line) else { return .nothingSaved }
            if let problem = snapshot.tokenProblem { return .awaitingToken(snapshot, problem: .store(problem)) }
            return .restored(snapshot)
        } catch {
            if case .store(.corrupted(_, let movedTo, _)) = error {
                return .setAside(movedTo: movedTo, problem: error)
            }
            return .failed(error)
        }
    }
}

/// What ``EnvironmentStack/restoreAtLaunch(from:fileID:line:)`` found.
public enum LaunchRestore<App: EnvironmentSchema>: Sendable {
    /// The saved state is back; its session, if any, is ``AuthState/restored`` until a refresh.
    case restored(SessionSnapshot<App>)
    /// The saved state is back, but the secret store couldn't be read (`problem` says why):
    /// the session is ``AuthState/awaitingToken``, with the user's data and no token yet.
    /// Restore again when the secret store is available (on Apple platforms, when protected
    /// data becomes available), or refresh with autosave on.
    case awaitingToken(SessionSnapshot<App>, problem: SnapshotError)
    /// Nothing was saved: a first launch, or the store was cleared.
    case nothingSaved
    /// The store's file was damaged; it was moved to `movedTo` (for a bug report) and the app
    /// starts as if nothing was saved.
    case setAside(movedTo: String, problem: SnapshotError)
    /// The saved state could not be restored and was left as it is: written by a newer version
    /// of the app, unreadable right now, or not a valid snapshot. The next save overwrites it
    /// with the stack's state: retry the restore before enabling autosave when the saved
    /// session may still be good.
    case failed(SnapshotError)

    /// What went wrong, if anything did: `nil` after ``restored(_:)`` and ``nothingSaved``.
    public var problem: SnapshotError? {
        switch self {
        case .restored, .nothingSaved: nil
        case .awaitingToken(_, let problem), .setAside(_, let problem), .failed(let problem): problem
        }
    }

    /// The restored snapshot, if any (after ``restored(_:)`` and ``awaitingToken(_:problem:)``).
    public var snapshot: SessionSnapshot<App>? {
        switch self {
        case .restored(let snapshot), .awaitingToken(let snapshot, _): snapshot
        case .nothingSaved, .setAside, .failed: nil
        }
    }
}
