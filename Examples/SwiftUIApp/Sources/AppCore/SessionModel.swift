import Foundation
#if canImport(Combine)
import Combine
#endif
import Habitat
import HabitatPersistence

/// A window's session: main-actor state its views show. The app's main window uses the app's
/// stack; a window opened on an account of its own (`WindowGroup(for:)`) has a
/// `WindowEnvironment`, so switching accounts there changes no other window.
public final class SessionModel: ObservableObject {
    /// What the screen says.
    @Published public private(set) var status = "Starting"
    /// Follows the window's session and configuration for the views: give it to them as an
    /// environment object of its own (SwiftUI redraws a view for the objects it observes, not
    /// for an object inside one).
    public let environment: PublishedEnvironment<MainApp>
    /// The window's own environment, or `nil` in the main window, which shows the app's stack.
    public let window: WindowEnvironment<MainApp>?

    /// - Parameter window: A window's own environment; `nil` (the default) for the main window.
    public init(window: WindowEnvironment<MainApp>? = nil) {
        self.window = window
        environment = PublishedEnvironment(window?.stack ?? appEnvironment)
    }

    /// The account the window shows: what its scene keeps to restore it (`@SceneStorage`, or a
    /// `WindowGroup(for:)` window's value).
    public var accountID: String? {
        if let window { return window.accountID }
        return appEnvironment.current.session.map { MainApp.accountID(of: $0.user) }
    }

    /// The line the home screen greets with.
    public var greeting: String {
        guard let user = environment.session?.user else { return "Please sign in" }
        return "\(environment.config.greeting), \(user.name)"
    }

    /// Restores the saved session at launch and saves every change from then on; a damaged
    /// store is reported, not fatal.
    ///
    /// - Parameters:
    ///   - sessions: Where the session is kept (``AppStorage/sessions(in:)``).
    ///   - protectedDataAvailable: Whether the device's protected data can be read now (on iOS,
    ///     `UIApplication.shared.isProtectedDataAvailable`): before the first unlock, the
    ///     Keychain may say "not found" for a token it holds, so the session waits for it.
    public func launch(from sessions: SessionStore<MainApp>, protectedDataAvailable: Bool = true) {
        let restored = appEnvironment.restoreAtLaunch(from: sessions)
        appEnvironment.enableAutosave(to: sessions)
        if protectedDataAvailable {
            appEnvironment.protectedDataDidBecomeAvailable(for: sessions)
        }
        switch restored {
        case .restored: status = "Restored"
        case .awaitingToken: status = "Waiting for the device to unlock"
        case .nothingSaved, .restoredLoggedOut: status = "Signed out"
        case .setAside(_, let problem), .failed(let problem): status = "Could not restore: \(problem.localizedDescription)"
        }
    }

    /// Tells the stack the Keychain can be read now (iOS's protected-data notification).
    public func protectedDataDidBecomeAvailable(for sessions: SessionStore<MainApp>) {
        switch appEnvironment.protectedDataDidBecomeAvailable(for: sessions) {
        case .restored: status = "Restored"
        case .loggedOut: status = "Signed out"
        case .stillAwaiting, .notAwaiting: break
        }
    }

    /// Signs in; in a window of its own, the account joins the app's others and the window
    /// shows it.
    public func signIn(email: String) async throws {
        let (account, token) = try await appEnvironment.current.services.auth.signIn(email)
        if let window {
            window.login(user: account, token: token)
        } else {
            appEnvironment.login(user: account, token: token)
        }
        status = "Signed in"
    }

    /// Shows another signed-in account in this window only.
    public func switchAccount(to id: String) throws {
        if let window {
            try window.switchAccount(to: id)
        } else {
            try appEnvironment.switchAccount(to: id)
        }
    }

    /// Confirms the session with the server. The closure runs on the main actor, so it may
    /// touch the model's state.
    public func refresh() async throws -> SessionRefreshOutcome {
        try await appEnvironment.refreshSession(account: accountID) { session in
            status = "Refreshing"
            return .refreshed(token: try await appEnvironment.current.services.auth.refresh(session.token))
        }
    }

    /// Signs the window's account out of the app: every window showing it shows nobody.
    public func signOut() {
        if let window {
            window.logout()
        } else {
            appEnvironment.logout()
        }
        status = "Signed out"
    }
}
