import Habitat

/// What ``Habitat/EnvironmentStack/refreshSession(account:isolation:fileID:line:using:)`` did.
public enum SessionRefreshOutcome: Sendable, Hashable {
    /// The session is `AuthState.authenticated` with the new token (saved, when autosave is on).
    case refreshed
    /// The refresh may have spent the refresh token, but this app doesn't hold a new one it can
    /// keep, so the session ended rather than send that token a second time (servers that rotate
    /// refresh tokens take a reused one for theft and revoke every session of the user): the
    /// user signs in again. `reason` says why.
    case endedUnconfirmed(RefreshUnconfirmed)
    /// The app's refresh said its request never left the device (`SessionRefresh.notSent`,
    /// or it threw a `URLError` of no connection): nothing was spent, the session is as it
    /// was, and a later refresh may try again.
    case notSent
    /// The refresh can't take its turn on the lease beside the session store (its directory
    /// can't be trusted, or the lease can't be written): nothing was asked, since without the
    /// lease another process might send the same token. `problem` names the file.
    case refused(problem: SnapshotError)
    /// The store autosave writes to was made with `refreshesTokens: false` (an app extension's),
    /// and the app has not saved a newer token yet: nothing was asked. Try again later.
    case waitingForRotation
    /// The session was gone and the stack logged out; `expired` tells whether the token had
    /// expired by the environment's clock before the refresh.
    case ended(expired: Bool)
    /// Nobody was logged in; nothing was asked.
    case notLoggedIn
    /// The session is `AuthState.awaitingToken`: its token still can't be read, so nothing
    /// was asked; or the session store it shares with other processes can't be read now (a
    /// locked Keychain), so the refresh can't tell whether another process spent the token, and
    /// asked nothing. Refresh again (or restore) once the secret store is available.
    case awaitingToken
    /// The session changed while the refresh ran, and its result was dropped; or another
    /// process had saved the account's sign-out, which the stack took instead of asking.
    case superseded
}

/// Why a refresh ended its session instead of keeping its answer
/// (``SessionRefreshOutcome/endedUnconfirmed(_:)``).
public enum RefreshUnconfirmed: Sendable, Hashable {
    /// The app's refresh threw after its request may have reached the server: a dropped
    /// connection, a timeout, an error status after the server rotated the token. The call
    /// throws that error too.
    case answerLost
    /// New tokens arrived but couldn't be saved (`problem` says why: a locked secret store,
    /// say): an app killed now would relaunch with the spent token.
    case notSaved(problem: SnapshotError)
    /// The refresh outlived its lease, so another process may have taken the token's turn:
    /// its answer is dropped.
    case leaseLapsed
    /// Another process's refresh of this token lapsed without saying how it ended: the token
    /// may have been sent already, so it is not sent again.
    case spentElsewhere
}
