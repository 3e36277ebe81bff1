import Foundation
import Habitat
import HabitatPersistence
import Testing

// What users of the login frameworks and session managers Habitat replaces rely on: the token
// kept apart from the user's details and never in the plain store; what the store holds after
// each login, update and logout; the session restored at the next launch, "pre-session" until
// refreshed; a bad store never crashing the launch; an old store version migrated forward.

/// A launch of the app: a new stack over the app's stores, restoring what was saved.
private func launch(over sessions: SessionStore<AppSchema>) -> (EnvironmentStack<AppSchema>, LaunchRestore<AppSchema>) {
    let stack = EnvironmentStack<AppSchema>(HabitatEnvironment(services: .recording()))
    let found = stack.restoreAtLaunch(from: sessions)
    return (stack, found)
}

@Suite struct StoredSessionScenarios {
    @Test func theTokenIsKeptApartAndNeverInThePlainStore() throws {
        try withTemporaryDirectory { directory in
            let (sessions, _, secrets) = try appStores(in: directory)
            let stack = EnvironmentStack<AppSchema>(HabitatEnvironment(services: .recording()))
            stack.login(user: .ada, token: AuthToken("kc-secret-7c1e"))
            try stack.save(to: sessions)
            let plain = plainText(of: directory)
            #expect(plain.contains("ada@example.com"), "the user's details are in the plain store")
            #expect(!plain.contains("kc-secret-7c1e"), "the token never is")
            #expect(try secrets.secret(forKey: sessions.tokenKey(forAccount: AppSchema.accountID(of: .ada))) != nil, "the token is in the secret store")
        }
    }

    @Test func whatTheStoreHoldsAfterEachTransition() throws {
        let sessions = SessionStore<AppSchema>.inMemory()
        let stack = EnvironmentStack<AppSchema>(HabitatEnvironment(services: .recording()))
        #expect(try sessions.load() == nil, "nothing saved before the first save")

        stack.login(user: .ada, token: AuthToken("t1"))
        try stack.save(to: sessions)
        #expect(try sessions.load()?.session?.user == .ada)
        #expect(try sessions.load()?.session?.token == AuthToken("t1"))

        try stack.updateCurrentUser(Member(id: 1, name: "Ada Lovelace"))
        stack.updateConfig { $0.features = ["beta"] }
        try stack.save(to: sessions)
        #expect(try sessions.load()?.session?.user.name == "Ada Lovelace")
        #expect(try sessions.load()?.session?.token == AuthToken("t1"), "an update keeps the token")
        #expect(try sessions.load()?.config.features == ["beta"])

        try stack.logout(savingTo: sessions)
        let loggedOut = try #require(try sessions.load())
        #expect(loggedOut.session == nil, "logged out: no user, no token")
        #expect(loggedOut.config.features == ["beta"], "the configuration outlives the session")
    }

    @Test func aLogoutRemovesTheTokenFromTheSecretStore() throws {
        try withTemporaryDirectory { directory in
            let (sessions, _, secrets) = try appStores(in: directory)
            let stack = EnvironmentStack<AppSchema>(HabitatEnvironment(services: .recording()))
            stack.login(user: .grace, token: AuthToken("kc-2"))
            try stack.save(to: sessions)
            try stack.logout(savingTo: sessions)
            #expect(try secrets.secret(forKey: sessions.tokenKey) == nil)
            let files = try FileManager.default.contentsOfDirectory(atPath: directory.appendingPathComponent("secrets").path)
            #expect(!files.contains { !$0.hasPrefix(".") }, "no token file left behind")
        }
    }

    @Test func theNextLaunchRestoresTheSessionAsPreSessionUntilRefreshed() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("habitat-seeds-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        do {
            let (sessions, _, _) = try appStores(in: directory)
            let first = EnvironmentStack<AppSchema>(HabitatEnvironment(services: .recording()))
            first.login(user: .ada, token: AuthToken("old"))
            first.updateConfig { $0.locale = "fr" }
            try first.save(to: sessions)

            let (stack, found) = launch(over: sessions)
            guard case .restored = found else { Issue.record("expected a restored session, got \(found)"); return }
            #expect(stack.current.currentUser == .ada)
            #expect(stack.current.session?.state == .restored, "pre-session until the server confirms it")
            #expect(stack.current.services.api.token == AuthToken("old"), "the services hold the restored token")
            #expect(stack.current.config.locale == "fr")

            let outcome = await stack.refreshSession { _ in .refreshed(token: AuthToken("new")) }
            #expect(outcome == .refreshed)
            #expect(stack.current.session?.state == .authenticated)
            #expect(stack.current.services.api.token == AuthToken("new"))
        }
    }

    @Test func aSessionTheServerEndsIsLoggedOutAtRefresh() async throws {
        let sessions = SessionStore<AppSchema>.inMemory()
        let first = EnvironmentStack<AppSchema>(HabitatEnvironment(services: .recording()))
        first.login(user: .ada, token: AuthToken("revoked"))
        try first.save(to: sessions)
        let (stack, _) = launch(over: sessions)
        let outcome = await stack.refreshSession { _ in .ended }
        #expect(outcome == .ended(expired: false))
        #expect(stack.current.currentUser == nil)
    }

    @Test func aLaunchAfterALogoutStartsLoggedOut() throws {
        let sessions = SessionStore<AppSchema>.inMemory()
        let first = EnvironmentStack<AppSchema>(HabitatEnvironment(services: .recording()))
        first.login(user: .ada, token: AuthToken("t"))
        try first.save(to: sessions)
        try first.logout(savingTo: sessions)
        let (stack, found) = launch(over: sessions)
        guard case .restoredLoggedOut = found else { Issue.record("expected logged out, got \(found)"); return }
        #expect(stack.current.currentUser == nil)
    }

    @Test func aFirstLaunchFindsNothingAndStaysAsItWas() {
        let (stack, found) = launch(over: .inMemory())
        guard case .nothingSaved = found else { Issue.record("expected nothing saved, got \(found)"); return }
        #expect(stack.current.currentUser == nil)
        #expect(stack.depth == 1)
    }

    @Test func aSessionWhoseTokenIsGoneRestoresLoggedOut() throws {
        // Cely's "required properties": a user without the token is no session.
        try withTemporaryDirectory { directory in
            let (sessions, _, secrets) = try appStores(in: directory)
            let first = EnvironmentStack<AppSchema>(HabitatEnvironment(services: .recording()))
            first.login(user: .ada, token: AuthToken("t"))
            try first.save(to: sessions)
            try secrets.setSecret(nil, forKey: sessions.tokenKey(forAccount: AppSchema.accountID(of: .ada)))
            let (stack, _) = launch(over: sessions)
            #expect(stack.current.currentUser == nil, "never a user without a token")
        }
    }

    @Test func aDamagedStoreIsSetAsideAndTheLaunchStartsLoggedOut() throws {
        try withTemporaryDirectory { directory in
            let (sessions, _, _) = try appStores(in: directory)
            let first = EnvironmentStack<AppSchema>(HabitatEnvironment(services: .recording()))
            first.login(user: .ada, token: AuthToken("t"))
            try first.save(to: sessions)
            try Data("{ not json".utf8).write(to: directory.appendingPathComponent("session.json"))
            let (stack, found) = launch(over: sessions)
            guard case .setAside(let movedTo, _) = found else { Issue.record("expected set aside, got \(found)"); return }
            #expect(stack.current.currentUser == nil)
            let kept = try String(contentsOfFile: movedTo, encoding: .utf8)
            #expect(kept == "{ not json", "the bad file is kept, not overwritten")
        }
    }

    @Test func anOlderSnapshotVersionIsMigratedForward() throws {
        let plain = InMemoryStore()
        let secrets = InMemorySecretStore()
        let version1 = SessionStore<AppSchema>(store: plain, secrets: secrets)
        let first = EnvironmentStack<AppSchema>(HabitatEnvironment(services: .recording()))
        first.login(user: .ada, token: AuthToken("t"))
        first.updateConfig { $0.features = ["old-flag"] }
        try first.save(to: version1)

        // Version 2 renamed a feature flag.
        let renameFlag = SnapshotMigration(from: 1) { data in
            var document = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
            var payload = try #require(document["payload"] as? [String: Any])
            var config = try #require(payload["config"] as? [String: Any])
            let features = try #require(config["features"] as? [String])
            config["features"] = features.map { $0 == "old-flag" ? "new-flag" : $0 }
            payload["config"] = config
            document["payload"] = payload
            return try JSONSerialization.data(withJSONObject: document)
        }
        let version2 = SessionStore<AppSchema>(store: plain, secrets: secrets, version: 2, migrations: [renameFlag])
        let (stack, _) = launch(over: version2)
        #expect(stack.current.config.features == ["new-flag"])
        #expect(stack.current.currentUser == .ada)
    }

    @Test func aNewerSnapshotVersionIsATypedErrorAndNothingIsLost() throws {
        let plain = InMemoryStore()
        let secrets = InMemorySecretStore()
        let newer = SessionStore<AppSchema>(store: plain, secrets: secrets, version: 3)
        let first = EnvironmentStack<AppSchema>(HabitatEnvironment(services: .recording()))
        first.login(user: .ada, token: AuthToken("t"))
        try first.save(to: newer)
        let older = SessionStore<AppSchema>(store: plain, secrets: secrets, version: 1)
        let (stack, found) = launch(over: older)
        guard case .failed = found else { Issue.record("expected a failure, got \(found)"); return }
        #expect(stack.current.currentUser == nil)
        #expect(try newer.load()?.session?.user == .ada, "the newer app's data is untouched")
    }
}

/// A session manager that tells observers who signed in and out, with the old and the new user,
/// as the tutorial's `SessionManager` posts a notification.
@Suite struct SessionObserverScenarios {
    @Test func observersAreToldOfSignInAndSignOutWithTheOldAndNewUser() async throws {
        let stack = EnvironmentStack<AppSchema>(HabitatEnvironment(services: .recording()))
        let changes = stack.changes
        stack.login(user: .ada, token: AuthToken("a"))
        stack.login(user: .grace, token: AuthToken("g"))
        stack.logout()
        var told: [String] = []
        for await change in changes {
            told.append("\(change.kind): \(change.old.currentUser?.name ?? "nobody") -> \(change.new.currentUser?.name ?? "nobody")")
            if told.count == 3 { break }
        }
        #expect(told == ["login: nobody -> Ada", "login: Ada -> Grace", "logout: Grace -> nobody"])
    }

    @Test func signedInIsTrueOnlyBetweenLoginAndLogout() {
        let stack = EnvironmentStack<AppSchema>(HabitatEnvironment(services: .recording()))
        #expect(stack.current.session == nil)
        stack.login(user: .ada, token: AuthToken("a"))
        #expect(stack.current.session != nil)
        stack.logout()
        #expect(stack.current.session == nil)
    }
}

/// An app manager that keeps the user's details by typed keys beside the session, and resets
/// the token on logout.
@Suite struct TypedDetailsScenarios {
    @Test func detailsStoredByTypedKeysReadBackTyped() throws {
        let store = InMemoryStore()
        let department = StoreKey<String>("member.department")
        let visits = StoreKey<Int>("member.visits")
        try store.set("Engines", for: department)
        try store.set(3, for: visits)
        #expect(try store.value(for: department) == "Engines")
        #expect(try store.value(for: visits) == 3)
        try store.remove(department)
        #expect(try store.value(for: department) == nil)
    }

    @Test func eachAccountsDetailsAreItsOwn() throws {
        let sessions = SessionStore<AppSchema>.inMemory()
        let theme = StoreKey<String>("theme")
        try sessions.accountData(for: "1").set("dark", for: theme)
        try sessions.accountData(for: "2").set("light", for: theme)
        #expect(try sessions.accountData(for: "1").value(for: theme) == "dark")
        #expect(try sessions.accountData(for: "2").value(for: theme) == "light")
    }

    @Test func aRecoveredSessionKeepsWhatTheUserChoseAcrossLaunches() throws {
        let sessions = SessionStore<AppSchema>.inMemory()
        let first = EnvironmentStack<AppSchema>(HabitatEnvironment(services: .recording()))
        first.login(user: Member(id: 7, name: "Kim", email: "kim@example.com"), token: AuthToken("k"))
        try first.save(to: sessions)
        let (stack, _) = launch(over: sessions)
        #expect(stack.current.currentUser?.email == "kim@example.com")
    }
}
