import Foundation
import HabitatTesting
import HabitatPersistence
import Testing
@testable import AppCore

/// The main-actor view model under Swift Testing: every test starts from a fresh test environment
/// (the trait builds it per test), with the server replaced.
@Suite(.environment(appEnvironment, .test(services: .preview)))
struct SessionModelTests {
    @Test func signingInShowsTheUserAndTellsAnalyticsAndTheFeature() async throws {
        let model = SessionModel()
        try await model.signIn(email: "ada@example.com")
        #expect(model.status == "Signed in")
        #expect(appEnvironment.current.currentUser == Account(id: 1, name: "Ada"))
        #expect(appEnvironment.current.services.analyticsUserID == 1)
        #expect(appEnvironment.current.services.profile.member == ProfileMember(id: 1, name: "Ada"))
        try await waitUntil { model.greeting == "Hello, Ada" }
    }

    @Test func signingOutEndsTheSession() async throws {
        let model = SessionModel()
        try await model.signIn(email: "ada@example.com")
        model.signOut()
        #expect(model.status == "Signed out")
        #expect(appEnvironment.current.session == nil)
        #expect(appEnvironment.current.services.profile.member == nil)
        try await waitUntil { model.greeting == "Please sign in" }
    }

    @Test func refreshingRotatesTheTokenOnTheMainActor() async throws {
        let model = SessionModel()
        try await model.signIn(email: "ada@example.com")
        #expect(try await model.refresh() == .refreshed)
        #expect(model.status == "Refreshing")
        #expect(appEnvironment.current.session?.token.secret == "preview-token+")
    }

    @Test func launchRestoresTheSavedSession() async throws {
        let sessions = SessionStore<MainApp>.inMemory()
        try sessions.save(appEnvironment.current.with(\.session, UserSession(user: Account(id: 2, name: "Grace"), token: AuthToken("saved"))))
        let model = SessionModel()
        model.launch(from: sessions)
        #expect(model.status == "Restored")
        #expect(appEnvironment.current.session?.state == .restored)
        try await waitUntil { model.greeting == "Hello, Grace" }
    }

    @Test func aLockedDeviceKeepsTheSessionWaitingUntilProtectedDataIsAvailable() throws {
        let store = InMemoryStore()
        let sessions = SessionStore<MainApp>(store: store, secrets: InMemorySecretStore())
        try sessions.save(appEnvironment.current.with(\.session, UserSession(user: Account(id: 2, name: "Grace"), token: AuthToken("saved"))))
        let locked = SessionStore<MainApp>(store: store, secrets: LockedSecretStore())
        let model = SessionModel()
        model.launch(from: locked, protectedDataAvailable: false)
        #expect(model.status == "Waiting for the device to unlock")
        #expect(appEnvironment.current.session?.state == .awaitingToken)

        model.protectedDataDidBecomeAvailable(for: sessions)
        #expect(model.status == "Restored")
        #expect(appEnvironment.current.session?.token.secret == "saved")
    }

    @Test func aDamagedStoreIsReportedNotFatal() {
        let model = SessionModel()
        model.launch(from: SessionStore(store: InMemoryStore(["habitat.session": Data("{".utf8)]), secrets: InMemorySecretStore()))
        #expect(model.status.hasPrefix("Could not restore: the snapshot 'habitat.session' is not valid"))
        #expect(appEnvironment.current.session == nil)
    }
}

/// Windows of their own: each window's model shows its account, switches alone, and a sign-out
/// in one reaches the others.
@Suite(.environment(appEnvironment, .test(services: .preview)))
struct WindowModelTests {
    @Test func eachWindowShowsItsOwnAccount() async throws {
        let main = SessionModel()
        try await main.signIn(email: "ada@example.com")
        let window = SessionModel(window: WindowEnvironment(following: appEnvironment))
        appEnvironment.addAccount(user: Account(id: 2, name: "Grace"), token: AuthToken("grace"))
        try await waitUntil { window.environment.otherAccounts.count == 1 }
        try window.switchAccount(to: "2")
        #expect(window.accountID == "2")
        try await waitUntil { window.greeting == "Hello, Grace" }
        #expect(main.accountID == "2", "the main window shows the app's active account")
        try main.switchAccount(to: "1")
        try await waitUntil { main.greeting == "Hello, Ada" }
        #expect(window.greeting == "Hello, Grace", "the main window's switch changed no other window")
    }

    @Test func aSignOutInAWindowReachesTheMainWindow() async throws {
        let main = SessionModel()
        try await main.signIn(email: "ada@example.com")
        let window = SessionModel(window: WindowEnvironment(following: appEnvironment, showing: "1"))
        window.signOut()
        #expect(window.accountID == nil)
        try await waitUntil { window.greeting == "Please sign in" && main.greeting == "Please sign in" }
        #expect(appEnvironment.current.accounts.isEmpty)
    }
}

/// The profile feature's model, tested on a slice of its own: no app, no schema.
@Suite struct ProfileModelTests {
    @Test func showsTheSignedInMembersBio() async {
        let model = ProfileModel(environment: .test(ProfileServices(
            fetchBio: { id in id == 1 ? "Wrote the first program" : "?" },
            member: ProfileMember(id: 1, name: "Ada")
        )))
        await model.load()
        #expect(model.text == "Ada: Wrote the first program")
    }

    @Test func saysSoWhenNobodyIsSignedIn() async {
        let model = ProfileModel(environment: .test(ProfileServices(fetchBio: { _ in "unused" })))
        await model.load()
        #expect(model.text == "Nobody is signed in")
    }

    @Test(.environment(appEnvironment, .test(services: .preview)))
    func readsTheAppsEnvironmentThroughItsSlice() async throws {
        try await SessionModel().signIn(email: "ada@example.com")
        let model = ProfileModel(environment: appEnvironment.slice(\.profile))
        await model.load()
        #expect(model.text == "Ada: Wrote the first program")
    }
}

/// Where the app keeps its session, on a platform without a Keychain: a file store that
/// survives a relaunch.
@Suite struct AppStorageTests {
    @Test(.environment(appEnvironment, .test(services: .preview)))
    func aSessionSurvivesARelaunch() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("swiftui-app-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let first = try AppStorage.sessions(in: directory)
        try first.save(appEnvironment.current.with(\.session, UserSession(user: Account(id: 3, name: "Lin"), token: AuthToken("kept"))))

        let relaunched = try AppStorage.sessions(in: directory)
        let snapshot = try #require(try relaunched.load())
        #expect(snapshot.session?.user == Account(id: 3, name: "Lin"))
        #expect(snapshot.session?.token.secret == "kept")
    }
}

/// A secret store on a device before its first unlock: every read says "locked", and "not
/// found" can't be trusted.
nonisolated struct LockedSecretStore: SecretStore {
    var reportsMissingReliably: Bool { false }
    func secret(forKey key: String) throws(StoreError) -> Data? {
        throw .unavailable(key: key, reason: "the device is locked")
    }
    func setSecret(_ secret: Data?, forKey key: String) throws(StoreError) {
        throw .unavailable(key: key, reason: "the device is locked")
    }
}

/// Waits (a few seconds at most) for the main actor to catch up with `condition`.
func waitUntil(_ condition: () -> Bool, sourceLocation: SourceLocation = #_sourceLocation) async throws {
    for _ in 0..<500 where !condition() {
        try await Task.sleep(for: .milliseconds(10))
    }
    #expect(condition(), sourceLocation: sourceLocation)
}
