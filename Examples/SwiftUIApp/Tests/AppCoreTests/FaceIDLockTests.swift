import Foundation
import HabitatKeychain
import HabitatPersistence
import HabitatPersistenceTesting
import HabitatTesting
import Testing
@testable import AppCore

/// The "Require Face ID" setting and the unlock screen, on a model of the Keychain.
@Suite(.environment(appEnvironment, .test(services: .preview)))
struct FaceIDLockTests {
    let keychain = SimulatedKeychain()
    let snapshots = InMemoryStore()

    var sessions: SessionStore<MainApp> {
        let secrets = KeychainSecretStore(service: "com.example.swiftui", reportsMissingReliably: false, calls: keychain.calls)
        return SessionStore(store: snapshots, secrets: secrets)
    }

    /// Ada signed in and saved, with Face ID required: the model and the setting.
    func adaRequiringFaceID(in sessions: SessionStore<MainApp>) async throws -> (SessionModel, FaceIDLock) {
        let model = SessionModel()
        model.launch(from: sessions)
        try await model.signIn(email: "ada@example.com")
        try appEnvironment.save(to: sessions)
        let faceID = FaceIDLock(sessions: sessions)
        await faceID.setRequired(true)
        return (model, faceID)
    }

    @Test func aProtectedAccountShowsTheUnlockScreenUntilTheUserUnlocks() async throws {
        let (model, setting) = try await adaRequiringFaceID(in: sessions)
        #expect(setting.isRequired)

        // The next launch: a new Keychain store over the same items, nothing unlocked.
        let relaunched = sessions
        model.launch(from: relaunched)
        let faceID = FaceIDLock(sessions: relaunched)
        #expect(faceID.needsUnlock, "the unlock screen, not the sign-in form")
        #expect(appEnvironment.current.currentUser == Account(id: 1, name: "Ada"))
        #expect(keychain.promptsShown == 0, "nothing prompted at launch")

        keychain.answerNextPrompts(.cancel)
        #expect(await faceID.unlock() == false)
        #expect(faceID.needsUnlock, "a cancelled prompt leaves the account locked, still signed in")
        #expect(await faceID.unlock())
        #expect(!faceID.needsUnlock)
        #expect(appEnvironment.current.session?.token.secret == "preview-token")
        #expect(keychain.promptsShown == 2)
    }

    @Test func turningTheSettingOffAsksTheUserFirst() async throws {
        let (_, faceID) = try await adaRequiringFaceID(in: sessions)
        keychain.answerNextPrompts(.deny)
        await faceID.setRequired(false)
        #expect(faceID.isRequired, "denied: still required")
        #expect(faceID.problem == "the user was not recognised")
        await faceID.setRequired(false)
        #expect(!faceID.isRequired)
        #expect(keychain.promptsShown == 2)
    }
}
