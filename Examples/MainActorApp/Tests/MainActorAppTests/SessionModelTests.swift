import Foundation
import HabitatTesting
@testable import MainActorApp

/// The main-actor view model under Swift Testing: every test starts from a fresh test world
/// (the trait builds it per test), with the server replaced.
@Suite(.environment(AppEnvironment, .test(services: AppServices(auth: .preview), config: AppConfig())))
struct SessionModelTests {
    @Test func signingInShowsTheUserAndTellsAnalytics() async throws {
        let model = SessionModel()
        try await model.signIn(email: "ada@example.com")
        #expect(model.status == "Signed in")
        #expect(AppEnvironment.current.currentUser == Account(id: 1, name: "Ada"))
        #expect(AppEnvironment.current.services.analyticsUserID == 1)
        try await waitUntil { model.greeting == "Hello, Ada" }
    }

    @Test func refreshingRotatesTheTokenOnTheMainActor() async throws {
        let model = SessionModel()
        try await model.signIn(email: "ada@example.com")
        #expect(try await model.refresh() == .refreshed)
        #expect(model.status == "Refreshing")
        #expect(AppEnvironment.current.session?.token.secret == "preview-token+")
    }

    @Test func launchRestoresTheSavedSession() async throws {
        let sessions = SessionStore<MainApp>.inMemory()
        try sessions.save(AppEnvironment.current.settingSession(user: Account(id: 2, name: "Grace"), token: AuthToken("saved")))
        let model = SessionModel()
        model.launch(from: sessions)
        #expect(model.status == "Restored")
        #expect(AppEnvironment.current.session?.state == .restored)
        try await waitUntil { model.greeting == "Hello, Grace" }
    }

    @Test func aDamagedStoreIsReportedNotFatal() {
        let model = SessionModel()
        model.launch(from: SessionStore(store: InMemoryStore(["habitat.session": Data("{".utf8)]), secrets: InMemorySecretStore()))
        #expect(model.status.hasPrefix("Could not restore: the snapshot 'habitat.session' is not valid"))
        #expect(!AppEnvironment.current.isLoggedIn)
    }
}

/// Waits (a few seconds at most) for the main actor to catch up with `condition`.
func waitUntil(_ condition: () -> Bool, sourceLocation: SourceLocation = #_sourceLocation) async throws {
    for _ in 0..<500 where !condition() {
        try await Task.sleep(for: .milliseconds(10))
    }
    #expect(condition(), sourceLocation: sourceLocation)
}
