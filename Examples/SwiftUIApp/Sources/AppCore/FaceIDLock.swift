import Foundation
#if canImport(Combine)
import Combine
#endif
import Habitat
import HabitatKeychain
import HabitatPersistence

/// The app's "Require Face ID" setting, per account, and its unlock screen: a protected
/// account's token is read only once the user unlocks, from the foreground. Nothing prompts on
/// its own: at launch, in the background and in autosave, the account waits for its token.
public final class FaceIDLock: ObservableObject {
    /// Whether the active account's token needs Face ID, Touch ID or the passcode.
    @Published public private(set) var isRequired = false
    /// Why the last unlock or change didn't happen, for the screen.
    @Published public private(set) var problem: String?
    private let sessions: SessionStore<MainApp>?

    /// - Parameter sessions: The app's session store; without one (it couldn't be opened),
    ///   nothing is protected.
    public init(sessions: SessionStore<MainApp>?) {
        self.sessions = sessions
        update()
    }

    /// The Keychain store, where a token can be protected (on Apple platforms).
    private var keychain: KeychainSecretStore? { sessions?.secrets as? KeychainSecretStore }

    private var activeAccount: String? { appEnvironment.current.session.map { MainApp.accountID(of: $0.user) } }

    /// Whether the active account waits for the user: the unlock screen shows.
    public var needsUnlock: Bool { isRequired && appEnvironment.current.session?.state == .awaitingToken }

    /// Reads the active account's setting again (after a launch, a sign-in or a switch).
    public func update() {
        guard let sessions, let account = activeAccount else { return isRequired = false }
        isRequired = ((try? sessions.protection(forAccount: account)) ?? .none) != .none
    }

    /// Turns the active account's protection on or off; turning it off asks the user first.
    public func setRequired(_ required: Bool) async {
        guard let sessions, let keychain, let account = activeAccount else { return }
        do {
            if !required { try await keychain.unlock(reason: "Turn off Face ID for this account") }
            try sessions.setProtection(required ? .userPresence : .none, forAccount: account)
            problem = nil
        } catch {
            problem = "\(error)"
        }
        update()
    }

    /// The unlock screen's button: asks the user, then reads the waiting tokens.
    /// - Returns: Whether the active account's token was read.
    @discardableResult
    public func unlock() async -> Bool {
        guard let sessions, let keychain else { return false }
        do {
            try await keychain.unlock(reason: "Unlock your account")
        } catch {
            problem = "\(error)"
            return false
        }
        problem = nil
        // NB: the views follow the session through their `PublishedEnvironment`: the new state
        // redraws them.
        appEnvironment.protectedDataDidBecomeAvailable(for: sessions)
        return appEnvironment.current.session?.state == .restored
    }
}
