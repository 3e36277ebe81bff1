import Foundation
import Habitat
import HabitatKeychain
import HabitatPersistence
import HabitatPersistenceTesting
import HabitatTesting
import Testing

/// Where the app runs when it reads a protected token.
enum Surroundings: String, CaseIterable, Sendable {
    case foreground, background, appExtension, lockedDevice
}

/// Tokens behind Face ID, Touch ID or the passcode, per account, on a model of the Keychain
/// that models access control and prompts: nothing prompts but an explicit unlock, and a token
/// that needs a prompt is unavailable (its account waits), never a sign-out.
@Suite struct KeychainProtectionTests {
    let keychain = SimulatedKeychain()
    let snapshots = InMemoryStore()

    func secrets(policy: KeychainPromptPolicy = .oncePerLaunch) -> KeychainSecretStore {
        KeychainSecretStore(service: "com.example.app", reportsMissingReliably: false, promptPolicy: policy, calls: keychain.calls)
    }

    func sessions(_ secrets: KeychainSecretStore, refreshesTokens: Bool = true) -> SessionStore<KeychainAccountsApp> {
        SessionStore(store: snapshots, secrets: secrets, refreshesTokens: refreshesTokens)
    }

    func stack() -> EnvironmentStack<KeychainAccountsApp> {
        EnvironmentStack(HabitatEnvironment(services: NoServices()))
    }

    /// Ada signed in and saved, her token protected as `protection`.
    func adaProtected(_ protection: KeychainProtection) throws {
        let app = stack()
        app.login(user: Handle(id: "ada"), token: AuthToken("ada-token"))
        let sessions = sessions(secrets())
        try app.save(to: sessions)
        try sessions.setProtection(protection, forAccount: "ada")
        #expect(keychain.storedProtection(service: "com.example.app", account: "habitat.session.token.ada") == protection)
        #expect(try sessions.protection(forAccount: "ada") == protection)
    }

    static let protections: [KeychainProtection] = [.userPresence, .biometryAny, .biometryCurrentSet]

    /// Every protection, wherever the app runs: a launch, autosave and a refresh never prompt;
    /// the account waits for its token, never signed out; only an unlock in the foreground
    /// prompts, once, and then the token is read.
    @Test(arguments: protections, Surroundings.allCases)
    func aProtectedTokenIsReadOnlyAfterAnUnlockInTheForeground(_ protection: KeychainProtection, _ surroundings: Surroundings) async throws {
        try adaProtected(protection)
        keychain.canPrompt = surroundings == .foreground
        if surroundings == .lockedDevice { keychain.device = .locked }
        let secrets = secrets()
        let sessions = sessions(secrets, refreshesTokens: surroundings != .appExtension)
        let app = stack()
        guard case .awaitingToken = app.restoreAtLaunch(from: sessions) else {
            Issue.record("\(surroundings): a protected token is not a sign-out")
            return
        }
        #expect(app.current.currentUser == Handle(id: "ada"))
        app.enableAutosave(to: sessions)
        app.updateConfig { _ in }
        let outcome = await app.refreshSession { _ in .refreshed(token: AuthToken("ada-token-2")) }
        #expect(outcome == .awaitingToken, "\(surroundings): no refresh without the token")
        #expect(keychain.promptsShown == 0, "\(surroundings): nothing prompts on its own")

        do {
            try await secrets.unlock(reason: "Unlock Ada's account", for: protection)
            #expect(surroundings == .foreground, "only the foreground can prompt")
            #expect(keychain.promptsShown == 1)
            #expect(app.protectedDataDidBecomeAvailable(for: sessions) == .restored)
            #expect(app.current.session?.token.secret == "ada-token")
        } catch {
            #expect(error == .notInteractive && surroundings != .foreground, "\(surroundings): \(error)")
            #expect(keychain.promptsShown == 0)
            #expect(app.protectedDataDidBecomeAvailable(for: sessions) == .stillAwaiting(.store(.unavailable(
                key: "habitat.session.token.ada",
                reason: "the keychain can't be read now (simulated keychain status -25308): the device is locked, has not been unlocked since it started, or the item needs an unlock from the foreground (Face ID or the passcode)"
            ))))
            #expect(app.current.session?.state == .awaitingToken, "still waiting, still signed in")
        }
    }

    @Test(arguments: [SimulatedKeychain.PromptAnswer.deny, .cancel])
    func aDeniedOrCancelledPromptLeavesTheAccountWaiting(_ answer: SimulatedKeychain.PromptAnswer) async throws {
        try adaProtected(.userPresence)
        let secrets = secrets()
        let sessions = sessions(secrets)
        let app = stack()
        app.restoreAtLaunch(from: sessions)
        keychain.answerNextPrompts(answer)
        await #expect(throws: answer == .deny ? KeychainUnlockError.denied : .cancelled) {
            try await secrets.unlock(reason: "Unlock")
        }
        #expect(!secrets.isUnlocked)
        guard case .stillAwaiting = app.protectedDataDidBecomeAvailable(for: sessions) else {
            Issue.record("a refused prompt is never a sign-out")
            return
        }
        #expect(app.current.currentUser == Handle(id: "ada"))
        try await secrets.unlock(reason: "Unlock")
        #expect(app.protectedDataDidBecomeAvailable(for: sessions) == .restored, "the next unlock that succeeds completes it")
    }

    @Test func oncePerLaunchPromptsOnceUntilTheAppLocks() async throws {
        try adaProtected(.userPresence)
        let secrets = secrets(policy: .oncePerLaunch)
        try await secrets.unlock(reason: "Unlock")
        try await secrets.unlock(reason: "Unlock")
        #expect(keychain.promptsShown == 1)
        #expect(try sessions(secrets).load()?.session?.token.secret == "ada-token")
        secrets.lock()
        #expect(try sessions(secrets).load()?.session?.state == .awaitingToken, "locked now: the token is unavailable again")
        try await secrets.unlock(reason: "Unlock")
        #expect(keychain.promptsShown == 2)
    }

    @Test func everyUnlockPromptsEveryTime() async throws {
        try adaProtected(.userPresence)
        let secrets = secrets(policy: .everyUnlock)
        try await secrets.unlock(reason: "Unlock")
        try await secrets.unlock(reason: "Unlock")
        #expect(keychain.promptsShown == 2)
    }

    @Test func aWindowReusesOnePromptAndEndsOnItsOwn() async throws {
        try adaProtected(.userPresence)
        let secrets = secrets(policy: .within(.seconds(300)))
        try await secrets.unlock(reason: "Unlock")
        secrets.advanceClock(by: .seconds(299))
        try await secrets.unlock(reason: "Unlock")
        #expect(keychain.promptsShown == 1, "within the window, one prompt")
        #expect(try sessions(secrets).load()?.session?.token.secret == "ada-token")
        secrets.advanceClock(by: .seconds(2))
        #expect(!secrets.isUnlocked)
        #expect(try sessions(secrets).load()?.session?.state == .awaitingToken, "past the window, the token is unavailable")
        try await secrets.unlock(reason: "Unlock")
        #expect(keychain.promptsShown == 2)
    }

    @Test func aNewFaceSignsOutAnAccountProtectedByTheCurrentEnrolmentWithItsOwnReason() async throws {
        try adaProtected(.biometryCurrentSet)
        keychain.changeEnrolment()
        let secrets = secrets()
        let sessions = sessions(secrets)
        let app = stack()
        app.restoreAtLaunch(from: sessions)
        try await secrets.unlock(reason: "Unlock", for: .biometryCurrentSet)
        guard case .loggedOut(let problem) = app.protectedDataDidBecomeAvailable(for: sessions),
              case .protectionInvalidated(let key, _) = problem else {
            Issue.record("an enrolment change is a sign-out with its own reason")
            return
        }
        #expect(key == "habitat.session.token.ada")
        #expect(app.current.session == nil)
        #expect(keychain.storedData(service: "com.example.app", account: "habitat.session.token.ada") == nil, "the dead item is gone")
    }

    @Test func anyFaceStillOpensAnAccountProtectedByAnyBiometry() async throws {
        try adaProtected(.biometryAny)
        keychain.changeEnrolment()
        let secrets = secrets()
        try await secrets.unlock(reason: "Unlock", for: .biometryAny)
        #expect(try sessions(secrets).load()?.session?.token.secret == "ada-token")
    }

    @Test func aPasscodeOpensUserPresenceButNotBiometryOnly() async throws {
        let app = stack()
        app.login(user: Handle(id: "ada"), token: AuthToken("ada-token"))
        app.addAccount(user: Handle(id: "grace"), token: AuthToken("grace-token"))
        let setup = sessions(secrets())
        try app.save(to: setup)
        try setup.setProtection(.userPresence, forAccount: "grace")
        try setup.setProtection(.biometryAny, forAccount: "ada")
        let secrets = secrets()
        keychain.answerNextPrompts(.accept(.passcode))
        try await secrets.unlock(reason: "Unlock")
        let snapshot = try #require(try sessions(secrets).load())
        #expect(snapshot.session?.token.secret == "grace-token", "grace (active) needs the user, by any means")
        #expect(snapshot.otherAccounts.first?.state == .awaitingToken, "ada's biometry-only token needs a face")
    }

    /// A protected account that isn't the active one waits for its token without holding up
    /// the others: a sign-out of the active account is saved, and the waiting one stays.
    @Test func aWaitingProtectedAccountDoesntStopTheOthersFromBeingSaved() throws {
        let first = stack()
        first.login(user: Handle(id: "grace"), token: AuthToken("grace-token"))
        first.addAccount(user: Handle(id: "ada"), token: AuthToken("ada-token"))
        let setup = sessions(secrets())
        try first.save(to: setup)
        try setup.setProtection(.userPresence, forAccount: "grace")
        try first.switchAccount(to: "ada")
        try first.save(to: setup)

        let sessions = sessions(secrets())
        let app = stack()
        app.restoreAtLaunch(from: sessions)
        #expect(app.current.session?.token.secret == "ada-token")
        #expect(app.current.otherAccounts.map(\.state) == [.awaitingToken])
        app.logout()
        try app.save(to: sessions)

        let relaunched = try #require(try sessions.load())
        #expect(relaunched.session == nil, "the sign-out was saved")
        #expect(relaunched.otherAccounts.map(\.user.id) == ["grace"], "and grace waits still")
        #expect(keychain.storedData(service: "com.example.app", account: "habitat.session.token.grace") != nil)
        #expect(keychain.storedData(service: "com.example.app", account: "habitat.session.token.ada") == nil)
    }

    /// A follower keeps taking other processes' changes while a protected account waits.
    @Test func aWaitingProtectedAccountDoesntStopAFollower() async throws {
        let setup = stack()
        setup.login(user: Handle(id: "grace"), token: AuthToken("grace-token"))
        setup.addAccount(user: Handle(id: "ada"), token: AuthToken("ada-token"))
        try setup.save(to: sessions(secrets()))
        try sessions(secrets()).setProtection(.userPresence, forAccount: "grace")

        let follower = stack()
        let sessions = sessions(secrets())
        follower.restoreAtLaunch(from: sessions)
        #expect(follower.current.otherAccounts.map(\.state) == [.awaitingToken])
        let following = follower.followStore(sessions, checkingEvery: .milliseconds(20))
        defer { following.stop() }

        let other = stack()   // another process, the same store
        other.restoreAtLaunch(from: sessions)
        other.addAccount(user: Handle(id: "alan"), token: AuthToken("alan-token"))
        try other.save(to: sessions)
        try await eventually { follower.current.session?.token.secret == "alan-token" }
        #expect(follower.current.otherAccounts.map(\.user.id).sorted() == ["ada", "grace"])
        #expect(keychain.promptsShown == 0)
    }

    @Test func aRotatedTokenStaysProtected() async throws {
        try adaProtected(.userPresence)
        let secrets = secrets()
        let sessions = sessions(secrets)
        let app = stack()
        app.restoreAtLaunch(from: sessions)
        try await secrets.unlock(reason: "Unlock")
        app.protectedDataDidBecomeAvailable(for: sessions)
        app.enableAutosave(to: sessions)
        _ = await app.refreshSession { _ in .refreshed(token: AuthToken("ada-token-2")) }
        #expect(try sessions.load()?.session?.token.secret == "ada-token-2")
        #expect(keychain.storedProtection(service: "com.example.app", account: "habitat.session.token.ada") == .userPresence)
    }

    @Test func liftingAProtectionNeedsAnUnlockFirst() async throws {
        try adaProtected(.userPresence)
        let secrets = secrets()
        let sessions = sessions(secrets)
        #expect(throws: StoreError.self) { try sessions.setProtection(.none, forAccount: "ada") }
        #expect(keychain.storedProtection(service: "com.example.app", account: "habitat.session.token.ada") == .userPresence, "nothing changed")
        try await secrets.unlock(reason: "Turn Face ID off")
        try sessions.setProtection(.none, forAccount: "ada")
        secrets.lock()
        #expect(try sessions.load()?.session?.token.secret == "ada-token", "read without a prompt again")
        #expect(keychain.promptsShown == 1)
    }

    @Test func onlyTheKeychainProtectsAToken() throws {
        let sessions = SessionStore<KeychainAccountsApp>.inMemory()
        #expect(throws: StoreError.self) { try sessions.setProtection(.userPresence, forAccount: "ada") }
    }

    @Test func aDeviceWithoutBiometryCantProtectByBiometry() throws {
        keychain.biometryEnrolled = false
        let app = stack()
        app.login(user: Handle(id: "ada"), token: AuthToken("ada-token"))
        let sessions = sessions(secrets())
        try app.save(to: sessions)
        #expect(throws: StoreError.self) { try sessions.setProtection(.biometryAny, forAccount: "ada") }
        #expect(try sessions.load()?.session?.token.secret == "ada-token", "the token was put back as it was")
        #expect(try sessions.protection(forAccount: "ada") == KeychainProtection.none)
    }
}
