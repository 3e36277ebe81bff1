/// One window's environment: a stack of its own that follows the app's stack, showing an account
/// of its own among the signed-in ones, for apps with several windows (iPad, Mac, visionOS)
/// where each window may be a different account.
///
/// The app's stack keeps the sessions, saves them and refreshes them: it stays the one place an
/// account signs in or out. A window's ``stack`` holds the app's accounts with the window's own
/// active one (``accountID``), the app's configuration, and whatever the window pushes on it:
///
/// - ``switchAccount(to:fileID:line:)`` changes this window only;
/// - ``logout(fileID:line:)`` signs the window's account out of the app, so every window
///   showing it signs out, and ``login(user:token:fileID:line:)`` signs an account in to the
///   app and shows it here;
/// - a refresh, a restore or a sign-out made on the app's stack reaches every window;
/// - ``accountID`` is what a scene keeps (`@SceneStorage`) to show the same account after a
///   relaunch; ``close()`` (or releasing the window) stops following.
///
/// <!-- not compiled: SwiftUI exists only on Apple platforms -->
/// ```swift
/// struct AccountWindowView: View {
///     @SceneStorage("account") private var account: String?
///     @State private var window: WindowEnvironment<AppSchema>?
///     var body: some View {
///         Group { if let window { HomeView(window: window) } }
///             .onAppear { window = WindowEnvironment(following: appEnvironment, showing: account) }
///             .onDisappear { window?.close() }
///     }
/// }
/// ```
///
/// An app with one window needs none of this: it reads the app's stack as before.
public final class WindowEnvironment<App: EnvironmentSchema>: Sendable {
    /// The window's own stack: its views read it (``EnvironmentStack/current``), follow it
    /// (``PublishedEnvironment``, ``ObservableEnvironment``) and may push frames on it.
    ///
    /// Sign in, out and switch through the window (``login(user:token:fileID:line:)``,
    /// ``logout(fileID:line:)``, ``switchAccount(to:fileID:line:)``), never through this stack's
    /// own session methods: the app's stack keeps the sessions, and its next change replaces
    /// whatever this stack's own calls did.
    public let stack: EnvironmentStack<App>
    /// The app's stack the window follows.
    public let app: EnvironmentStack<App>
    /// The account shown, the position in the app's changes of the last app state applied, and
    /// the account shown when it was applied.
    private let shown: LockedBox<(name: String?, applied: UInt64, appliedName: String?)>
    private let follower = LockedBox<(task: Task<Void, Never>?, closed: Bool)>((nil, false))

    /// Opens a window's environment on `app`'s stack.
    ///
    /// - Parameters:
    ///   - app: The app's stack, usually its global `appEnvironment`.
    ///   - account: The account the window shows (``EnvironmentSchema/accountID(of:)``), as a
    ///     scene kept it. When `nil`, or no longer signed in, the window shows the app's active
    ///     account, or nobody.
    ///   - fileID: The calling file, recorded in the window stack's base frame.
    ///   - line: The calling line, recorded with it.
    public init(following app: EnvironmentStack<App>, showing account: String? = nil, fileID: StaticString = #fileID, line: UInt = #line) {
        self.app = app
        // NB: subscribe before reading, so no change falls between the two.
        let changes = app.changes
        let (current, sequence) = app.currentAndSequence()
        let name = account.flatMap { current.position(named: $0) == nil ? nil : $0 } ?? current.activeAccountID
        shown = LockedBox((name, sequence, name))
        var base = current
        let (active, others) = Self.accounts(of: current, showing: name)
        base.setAll(active: active, others: others)
        base.applySession()
        stack = EnvironmentStack(base, fileID: fileID, line: line)
        // NB: detached, so it holds no copy of a test scope's binding: `changes` names the scope's
        // stack already, and each change carries the app's state. It holds the window weakly;
        // `close()` or the window's release ends it. (The app's own switch moves no window.)
        follower.withLock {
            $0.task = Task.detached { [weak self] in
                for await change in changes where change.kind != .accountSwitched {
                    guard let self, !self.follower.withLock({ $0.closed }) else { return }
                    self.follow(change.new, at: change.sequence, cause: change.kind, seenBefore: false, fileID: #fileID, line: #line)
                }
            }
        }
    }

    deinit {
        close()
    }

    /// The account the window shows (``EnvironmentSchema/accountID(of:)``), or `nil` when it
    /// shows nobody: what a scene keeps to restore the window.
    public var accountID: String? { shown.withLock { $0.name } }

    /// Shows another signed-in account in this window; no other window changes.
    /// - Parameters:
    ///   - name: The account's ``EnvironmentSchema/accountID(of:)``.
    ///   - fileID: The calling file, recorded in the frame.
    ///   - line: The calling line, recorded with it.
    /// - Throws: ``SessionError/unknownAccount(_:operation:)`` when no such account is signed in.
    public func switchAccount(to name: String, fileID: StaticString = #fileID, line: UInt = #line) throws(SessionError) {
        guard app.currentAndSequence().0.position(named: name) != nil else { throw .unknownAccount(name, operation: "switchAccount") }
        guard name != accountID else { return }
        shown.withLock { $0.name = name }
        // NB: the app's state read after the name is set: one the follower applies meanwhile
        // shows the new name already.
        followApp(cause: .accountSwitched, fileID: fileID, line: line)
    }

    /// Signs `user` in to the app (``EnvironmentStack/addAccount(user:token:fileID:line:)``, so
    /// the other accounts stay signed in) and shows it in this window.
    /// - Parameters:
    ///   - user: The user who signed in.
    ///   - token: Their access token.
    ///   - fileID: The calling file, recorded in the frames.
    ///   - line: The calling line, recorded with it.
    public func login(user: App.User, token: AuthToken, fileID: StaticString = #fileID, line: UInt = #line) {
        app.addAccount(user: user, token: token, fileID: fileID, line: line)
        shown.withLock { $0.name = App.accountID(of: user) }
        followApp(cause: .login, fileID: fileID, line: line)
    }

    /// Signs the window's account out of the app: every window that shows it shows nobody.
    /// - Parameters:
    ///   - fileID: The calling file, recorded in the frames.
    ///   - line: The calling line, recorded with it.
    /// - Returns: The session that ended, or `nil` when the window showed nobody.
    @discardableResult
    public func logout(fileID: StaticString = #fileID, line: UInt = #line) -> UserSession<App.User>? {
        guard let name = accountID else { return nil }
        let ended = app.logout(account: name, fileID: fileID, line: line)
        followApp(cause: .logout, fileID: fileID, line: line)
        return ended
    }

    /// Stops following the app's stack; the window's stack keeps what it holds. Releasing the
    /// window does the same.
    public func close() {
        follower.withLock { state in
            state.closed = true
            return state.task
        }?.cancel()
    }

    /// Applies the app's state now, for a call of the window's that changed it (`cause`).
    func followApp(cause: EnvironmentChangeKind, fileID: StaticString, line: UInt) {
        let (current, sequence) = app.currentAndSequence()
        follow(current, at: sequence, cause: cause, fileID: fileID, line: line)
    }

    /// Moves the window's stack to `current`, the app's state after its change number
    /// `sequence`, with the window's account active. A change already applied is skipped (a
    /// call of the window's applies the app's state at once, before the follower sees the
    /// change); the window's own call (`seenBefore`) applies a state seen before only when the
    /// window's account changed since (a switch, or a sign-in its follower took first): the same
    /// state for the same account again would publish a change where nothing moved.
    ///
    /// NB: the window's stack is written with `shown`'s lock held, so two states are applied in
    /// their order; the write tells the services (`SessionDependent`), which never reach a window.
    private func follow(
        _ current: HabitatEnvironment<App>,
        at sequence: UInt64,
        cause: EnvironmentChangeKind,
        seenBefore: Bool = true,
        fileID: StaticString,
        line: UInt
    ) {
        shown.withLock { shown in
            let again = seenBefore && sequence == shown.applied && shown.name != shown.appliedName
            guard sequence > shown.applied || again else { return }
            shown.applied = sequence
            // An account signed out of the app is shown no more, even if it signs in again.
            if let name = shown.name, current.position(named: name) == nil { shown.name = nil }
            shown.appliedName = shown.name
            let (active, others) = Self.accounts(of: current, showing: shown.name)
            stack.run(.followed(active, others: others, config: current.config, cause: cause), fileID: fileID, line: line)
        }
    }

    /// `environment`'s accounts as the window holds them: the one named `name` active, the
    /// others in the app's order.
    private static func accounts(of environment: HabitatEnvironment<App>, showing name: String?) -> (UserSession<App.User>?, [UserSession<App.User>]) {
        let all = environment.allSessions
        guard let name, let index = all.firstIndex(where: { App.isAccount($0.user, named: name) }) else { return (nil, all) }
        var others = all
        return (others.remove(at: index), others)
    }
}

extension EnvironmentStack {
    /// The calling task's current environment and the number of the last change made to it (its
    /// ``EnvironmentChange/sequence``), read together.
    func currentAndSequence() -> (HabitatEnvironment<App>, UInt64) {
        withActiveState { state in state.withGuarded { ($0.top.environment, $0.feed.sequence) } }
    }
}
