import Foundation
import Habitat
import HabitatPersistence
import HabitatTesting
import Testing

/// An app and its extension (a widget, a share extension) on one session: the snapshot and the
/// lock in a shared directory (an app group's container), the token in a shared secret store (a
/// keychain access group; here, a secrets directory in the same container). The app rotates the
/// token; the extension, made with `refreshesTokens: false`, never asks the server.
@Suite(.timeLimit(.minutes(1))) struct AppExtensionTests {
    func launch(_ directory: TemporaryDirectory, refreshesTokens: Bool) throws -> (EnvironmentStack<TestApp>, SessionStore<TestApp>) {
        let stack = makeStack()
        let sessions = try sharedSessions(in: directory.url, refreshesTokens: refreshesTokens)
        stack.restoreAtLaunch(from: sessions)
        stack.enableAutosave(to: sessions)
        return (stack, sessions)
    }

    /// Ada signed in with the token "old" in the shared directory, then the app and the
    /// extension launched on it, each with its stack and store.
    func appAndExtension(_ directory: TemporaryDirectory) throws -> (app: (EnvironmentStack<TestApp>, SessionStore<TestApp>), widget: (EnvironmentStack<TestApp>, SessionStore<TestApp>)) {
        try sharedSessions(in: directory.url).save(makeEnvironment().with(\.session, UserSession(user: .ada, token: AuthToken("old"))))
        return (try launch(directory, refreshesTokens: true), try launch(directory, refreshesTokens: false))
    }

    @Test func anExtensionThatNeverRefreshesWaitsForTheAppsRotation() async throws {
        let directory = try TemporaryDirectory()
        let ((app, _), (widget, _)) = try appAndExtension(directory)

        let calls = Counter()
        let early = await widget.refreshSession { _ in
            calls.increment()
            return .refreshed(token: AuthToken("by-the-widget"))
        }
        #expect(early == .waitingForRotation)
        #expect(widget.current.session?.token.secret == "old")

        #expect(await app.refreshSession { _ in .refreshed(token: AuthToken("rotated")) } == .refreshed)
        let late = await widget.refreshSession { _ in
            calls.increment()
            return .refreshed(token: AuthToken("by-the-widget"))
        }
        #expect(late == .refreshed)
        #expect(widget.current.session?.token.secret == "rotated")
        #expect(calls.value == 0, "the extension never asked the server")
    }

    /// The app's new token reached the extension first (its follower took it; here a restore
    /// stands in for it): the extension's refresh then refreshes that token, and waits for the
    /// app's next rotation, as documented: its caller compares tokens to retry.
    @Test func anExtensionThatAlreadyTookTheAppsTokenWaitsForTheNextRotation() async throws {
        let directory = try TemporaryDirectory()
        let ((app, _), (widget, widgetSessions)) = try appAndExtension(directory)
        #expect(await app.refreshSession { _ in .refreshed(token: AuthToken("rotated")) } == .refreshed)
        try widget.restore(from: widgetSessions)
        #expect(widget.current.session?.token.secret == "rotated")

        let outcome = await widget.refreshSession { _ in .refreshed(token: AuthToken("by-the-widget")) }
        #expect(outcome == .waitingForRotation)
        #expect(widget.current.session?.token.secret == "rotated", "the token a failed request's caller compares with")
    }

    @Test func anExtensionNeverWritesBackAnOlderToken() async throws {
        let directory = try TemporaryDirectory()
        let ((app, sessions), (widget, _)) = try appAndExtension(directory)
        #expect(await app.refreshSession { _ in .refreshed(token: AuthToken("rotated")) } == .refreshed)

        // The widget still holds "old"; a change it saves must not put "old" back.
        widget.updateConfig { $0.timeout = 5 }
        await widget.flushAutosave()
        #expect(try sessions.load()?.session?.token.secret == "rotated")

        // Nor may it bring back a session the app logged out of.
        app.logout()
        await app.flushAutosave()
        widget.updateConfig { $0.timeout = 6 }
        await widget.flushAutosave()
        #expect(try sessions.load()?.session == nil)
    }

    /// A stack that never read the store (it knows nothing of the app's session) signs a user
    /// in itself and saves through the extension's store: a token the store doesn't hold is
    /// never written there, so the app's session stands.
    @Test func anExtensionsStoreWritesNoTokenItDoesntHold() throws {
        let directory = try TemporaryDirectory()
        let appSessions = try sharedSessions(in: directory.url)
        try appSessions.save(makeEnvironment().with(\.session, UserSession(user: .ada, token: AuthToken("the-apps"))))
        let widget = makeStack()
        widget.login(user: .grace, token: AuthToken("the-widgets-own"))
        try widget.save(to: try sharedSessions(in: directory.url, refreshesTokens: false))
        let stored = try #require(try appSessions.load())
        #expect(stored.session?.user == .ada && stored.session?.token.secret == "the-apps", "the app's session stands")
        #expect(try !directory.anyFileContains("the-widgets-own"))
    }

    @Test(.enabled(if: canRunFixtures))
    func anAppAndItsExtensionInTwoProcessesMakeOneRefresh() throws {
        let directory = try TemporaryDirectory()
        try sharedSessions(in: directory.url).save(makeEnvironment().with(\.session, UserSession(user: .ada, token: AuthToken("old"))))
        let (tokens, refreshes) = try refreshTogether(in: directory, ["refresh-together", "extension-wait"])
        #expect(refreshes.count == 1, "one request to the server, by the app: \(refreshes)")
        #expect(refreshes.allSatisfy { !$0.contains("extension") })
        #expect(tokens[0].hasPrefix("rotated-by-"))
        #expect(tokens[1] == tokens[0], "the extension took the app's token: \(tokens)")
        #expect(try sharedSessions(in: directory.url).load()?.session?.token.secret == tokens[0])
    }
}

@Suite struct SessionStoreDescriptionTests {
    @Test func printingAStoreShowsItsSettingsNotItsMachinery() {
        let sessions = SessionStore<TestApp>(store: InMemoryStore(), secrets: InMemorySecretStore(), version: 3)
        #expect("\(sessions)" == "SessionStore<TestApp>(key: habitat.session, version: 3, store: InMemoryStore, secrets: InMemorySecretStore)")
        var dumped = ""
        dump(sessions, to: &dumped)
        #expect(!dumped.contains("lock:"))
        #expect(!dumped.contains("migrations"))
        #expect(dumped.contains("version: 3"))
    }
}
