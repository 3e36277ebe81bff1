import Foundation
import Habitat
import HabitatPersistence
import Observation

/// The sign-in screen's model: main-actor state the views show.
@Observable
public final class SessionModel {
    /// What the screen says.
    public private(set) var status = "Starting"
    /// Follows the stack's session and configuration for the views.
    public let environment = ObservableEnvironment(appEnvironment)

    public init() {}

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

    public func signIn(email: String) async throws {
        let (account, token) = try await appEnvironment.current.services.auth.signIn(email)
        appEnvironment.login(user: account, token: token)
        status = "Signed in"
    }

    /// Confirms the session with the server. The closure runs on the main actor, so it may
    /// touch the model's state.
    public func refresh() async throws -> SessionRefreshOutcome {
        try await appEnvironment.refreshSession { session in
            status = "Refreshing"
            return .refreshed(token: try await appEnvironment.current.services.auth.refresh(session.token))
        }
    }

    public func signOut() {
        appEnvironment.logout()
        status = "Signed out"
    }
}
