import Foundation
import Habitat
import HabitatPersistence
import HabitatPersistenceTesting
import Testing

/// A save decides its writes before it makes any: the plan, read without I/O.
@Suite struct SavePlanTests {
    let sessions = SessionStore<AccountsApp>.inMemory()

    /// Each step as a line: what it does, to which key, what a failure of it means, and the
    /// crash its flush guards against.
    func lines(_ plan: SavePlan?) -> [String] {
        (plan?.steps ?? []).map { step in
            switch step.action {
            case .setSecret(let key, let data): "\(data == nil ? "delete" : "write") \(key) \(step.onFailure) \(step.flush)"
            case .purgeData(let account): "purge \(account) \(step.onFailure) \(step.flush)"
            case .setSnapshot: "snapshot \(step.onFailure) \(step.flush)"
            }
        }
    }

    /// What the store holds once `environment` was saved, for the next plan.
    func stored(after environment: HabitatEnvironment<AccountsApp>) throws -> StoredTokens {
        try sessions.save(environment)
        var stored = StoredTokens(indexData: try sessions.secrets.secret(forKey: sessions.tokenKey))
        for name in ["ada", "alan", "grace"] {
            stored.items[name] = try sessions.secrets.secret(forKey: sessions.tokenKey(forAccount: name))
        }
        return stored
    }

    @Test func aLoginWritesTheIndexThenTheTokenThenTheSnapshot() throws {
        let stack = makeAccountsStack()
        stack.login(user: .ada, token: memberToken(.ada, 1))
        let plan = try sessions.savePlan(for: stack.current, stored: StoredTokens(indexData: nil))
        #expect(lines(plan) == [
            "write habitat.session.token abort index",
            "write habitat.session.token.ada undoAndAbort tokenBeforeSnapshot",
            "snapshot undoAndAbort commit",
        ])
    }

    @Test func aRotatedTokenGoesBesideThePreviousOneWhichGoesOnceTheSnapshotIsWritten() throws {
        let stack = threeAccounts()
        let before = try stored(after: stack.current)
        var environment = stack.current
        environment.otherAccounts[0].token = memberToken(.ada, 4)
        let plan = try #require(try sessions.savePlan(for: environment, stored: before))
        #expect(lines(plan) == [
            "write habitat.session.token.ada undoAndAbort tokenBeforeSnapshot",
            "snapshot undoAndAbort commit",
            "write habitat.session.token.ada ignore tidying",
        ], "the index already names ada: it isn't written")
        guard case .setSecret(_, let item?) = plan.steps[0].action else { Issue.record("no item written"); return }
        #expect(String(decoding: item, as: UTF8.self).contains("ada#1"), "the previous token stays until the snapshot names the new one")
    }

    @Test func aSwitchWritesTheSnapshotAlone() throws {
        let stack = threeAccounts()
        let before = try stored(after: stack.current)
        try stack.switchAccount(to: "ada")
        #expect(lines(try sessions.savePlan(for: stack.current, stored: before)) == ["snapshot undoAndAbort commit"])
    }

    @Test func aSignOutDeletesTheTokenFirstAndStandsWhateverFails() throws {
        let stack = threeAccounts()
        let before = try stored(after: stack.current)
        stack.logoutAll()
        #expect(lines(try sessions.savePlan(for: stack.current, stored: before)) == [
            "delete habitat.session.token.ada deferred signOut",
            "delete habitat.session.token.alan deferred signOut",
            "delete habitat.session.token.grace deferred signOut",
            "purge ada abort signOut", "purge alan abort signOut", "purge grace abort signOut",
            "snapshot undoAndAbort commit",
            "delete habitat.session.token stopTidying tidying",
        ])
    }

    /// The promise behind the flushes: nothing before the commit point is left unflushed, and
    /// nothing after it is flushed but the tidying (whatever the save: login, rotation, switch,
    /// another account's sign-out, every account's).
    @Test func onlyTheTidyingAfterTheSnapshotGoesUnflushed() throws {
        let stack = threeAccounts()
        let before = try stored(after: stack.current)
        var plans: [SavePlan?] = [try sessions.savePlan(for: makeAccountsStack().current, stored: StoredTokens(indexData: nil))]
        var rotated = stack.current
        rotated.otherAccounts[0].token = memberToken(.ada, 4)
        plans.append(try sessions.savePlan(for: rotated, stored: before))
        stack.logout(account: "ada")
        plans.append(try sessions.savePlan(for: stack.current, stored: before))
        stack.logoutAll()
        plans.append(try sessions.savePlan(for: stack.current, stored: before))
        let login = makeAccountsStack()
        login.login(user: .ada, token: memberToken(.ada, 1))
        plans.append(try sessions.savePlan(for: login.current, stored: StoredTokens(indexData: nil)))
        for plan in plans.compactMap({ $0 }) {
            let commit = try #require(plan.steps.firstIndex { $0.flush == .commit }, "\(lines(plan))")
            #expect(plan.steps.indices.allSatisfy { ($0 > commit) == (plan.steps[$0].flush == .tidying) }, "\(lines(plan))")
        }
        #expect(plans.compactMap { $0 }.contains { $0.steps.contains { $0.flush == .tidying } }, "a rotation and a sign-out tidy")
    }

    @Test func anExtensionPlansNothingForATokenItDoesntHold() throws {
        let extensionSessions = SessionStore<AccountsApp>(store: InMemoryStore(), secrets: InMemorySecretStore(), refreshesTokens: false)
        let stack = makeAccountsStack()
        stack.login(user: .ada, token: memberToken(.ada, 1))
        #expect(try extensionSessions.savePlan(for: stack.current, stored: StoredTokens(indexData: nil)) == nil)
    }
}

/// Stores written by 0.1.0 kept the active account's token in the index; the first save moves
/// it into the account's own item, and a kill at any point of the move loses nothing.
@Suite struct TokenLayoutMigrationTests {
    /// Three accounts (grace active) saved in 0.1.0's layout: grace's token entries in the index
    /// beside the others' names, ada's and alan's in their items.
    func legacyStore() throws -> (SessionStore<AccountsApp>, RefusingDeletes) {
        let secrets = RefusingDeletes(refusing: "none", writes: true)
        let sessions = SessionStore<AccountsApp>(store: InMemoryStore(), secrets: secrets)
        try threeAccounts().save(to: sessions)
        let grace = try #require(try json(secrets.secret(forKey: "habitat.session.token.grace")))
        // 0.1.0's index named each other account with its token's pair.
        var others: [String: String] = [:]
        for name in ["ada", "alan"] {
            let item = try #require(try json(secrets.secret(forKey: "habitat.session.token.\(name)")))
            others[name] = try #require((item["tokens"] as? [[String: String]])?.first?["id"])
        }
        let legacy: [String: Any] = ["format": "habitat.token", "tokens": grace["tokens"] as Any, "others": others, "account": "grace"]
        try secrets.setSecret(JSONSerialization.data(withJSONObject: legacy), forKey: "habitat.session.token")
        try secrets.setSecret(nil, forKey: "habitat.session.token.grace")
        return (sessions, secrets)
    }

    func json(_ data: Data?) throws -> [String: Any]? {
        try data.flatMap { try JSONSerialization.jsonObject(with: $0) as? [String: Any] }
    }

    func expectThreeAccounts(_ sessions: SessionStore<AccountsApp>, _ comment: Comment) throws {
        let snapshot = try #require(try sessions.load())
        #expect(snapshot.session?.user == .grace && snapshot.session?.token == memberToken(.grace, 3), comment)
        #expect(snapshot.otherAccounts.map(\.token) == [memberToken(.ada, 1), memberToken(.alan, 2)], comment)
    }

    @Test func aStoreIn010sLayoutLoadsAsItIs() throws {
        let (sessions, _) = try legacyStore()
        try expectThreeAccounts(sessions, "read where 0.1.0 wrote it")
    }

    @Test func theFirstSaveMovesTheActiveTokenIntoItsItem() throws {
        let (sessions, secrets) = try legacyStore()
        let stack = makeAccountsStack()
        try stack.restore(from: sessions)
        try stack.save(to: sessions)
        let index = try #require(try json(secrets.secret(forKey: "habitat.session.token")))
        #expect((index["tokens"] as? [Any])?.isEmpty == true, "the index holds no token")
        #expect((index["others"] as? [String: String]).map { Set($0.keys) } == ["ada", "alan", "grace"], "every account's item named")
        #expect(try secrets.secret(forKey: "habitat.session.token.grace").map { String(decoding: $0, as: UTF8.self).contains("grace#3") } == true)
        try expectThreeAccounts(sessions, "after the move")
    }

    /// The move writes grace's item, then the index: a kill before either, or between them,
    /// leaves a store that loads the same three accounts, and the next save finishes the move.
    @Test(arguments: ["habitat.session.token.grace", "habitat.session.token"])
    func aKillMidMoveLosesNothing(killedWriting key: String) throws {
        let (sessions, secrets) = try legacyStore()
        let stack = makeAccountsStack()
        try stack.restore(from: sessions)
        secrets.refusing = key
        #expect(throws: SnapshotError.store(.unavailable(key: key, reason: "refused by the test"))) { try stack.save(to: sessions) }
        try expectThreeAccounts(sessions, "killed writing \(key)")

        secrets.refusing = nil
        let relaunched = makeAccountsStack()
        try relaunched.restore(from: sessions)
        try relaunched.save(to: sessions)
        try expectThreeAccounts(sessions, "after the next save")
        let index = try #require(try json(secrets.secret(forKey: "habitat.session.token")))
        #expect((index["tokens"] as? [Any])?.isEmpty == true, "the move finished")
        #expect(secrets.base.keys == ["habitat.session.token", "habitat.session.token.ada", "habitat.session.token.alan", "habitat.session.token.grace"])
    }

    /// 0.1.0 wrote no name for an account without one (`accountID` is empty by default).
    @Test func anUnnamedAccountsTokenMovesToo() throws {
        let secrets = InMemorySecretStore()
        let store = InMemoryStore()
        let sessions = SessionStore<TestApp>(store: store, secrets: secrets)
        try sessions.save(makeEnvironment().with(\.session, UserSession(user: .ada, token: AuthToken("ada-token"))))
        let item = try #require(try json(secrets.secret(forKey: "habitat.session.token.")))
        try secrets.setSecret(JSONSerialization.data(withJSONObject: ["format": "habitat.token", "tokens": item["tokens"] as Any]), forKey: "habitat.session.token")
        try secrets.setSecret(nil, forKey: "habitat.session.token.")
        #expect(try sessions.load()?.session?.token.secret == "ada-token", "0.1.0's layout")

        try sessions.save(makeEnvironment().with(\.session, UserSession(user: .ada, token: AuthToken("ada-token"))).with(\.config.timeout, 5))
        #expect(try secrets.secret(forKey: "habitat.session.token.").map { String(decoding: $0, as: UTF8.self).contains("ada-token") } == true)
        #expect(try sessions.load()?.session?.token.secret == "ada-token")
    }

    @Test func movingTheTokenToAnotherSecretStoreMovesEveryAccountsItem() throws {
        let old = InMemorySecretStore()
        let store = InMemoryStore()
        try SessionStore<AccountsApp>(store: store, secrets: old).save(threeAccounts().current)
        let shared = InMemorySecretStore()
        let sessions = SessionStore<AccountsApp>(store: store, secrets: shared)
        #expect(try sessions.moveToken(from: old))
        #expect(old.keys.isEmpty, "nothing left behind")
        #expect(shared.keys.sorted() == ["habitat.session.token", "habitat.session.token.ada", "habitat.session.token.alan", "habitat.session.token.grace"])
        try expectThreeAccounts(sessions, "every account came along")
    }
}
