import Foundation
import Habitat
import HabitatPersistence
import Testing

@Suite struct StackTests {
    @Test func newStackHasItsBase() {
        let stack = makeStack()
        #expect(stack.depth == 1)
        #expect(stack.current.services.label == "live")
    }

    @Test func pushAndPopAreLastInFirstOut() {
        let stack = makeStack()
        stack.push(makeEnvironment("mock"))
        stack.push { $0.locale = Locale(identifier: "de_DE") }
        #expect(stack.depth == 3)
        #expect(stack.current.locale.identifier == "de_DE")
        #expect(stack.current.services.label == "mock")
        #expect(stack.pop()?.locale.identifier == "de_DE")
        #expect(stack.current.locale.identifier == "en_US_POSIX")
        #expect(stack.pop()?.services.label == "mock")
        #expect(stack.current.services.label == "live")
        #expect(stack.depth == 1)
    }

    @Test func poppingTheBaseReturnsNilAndChangesNothing() async {
        let stack = makeStack()
        stack.updateConfig { $0.timeout = 9 }
        let changes = stack.changes
        #expect(stack.pop() == nil)
        #expect(stack.pop() == nil)
        #expect(stack.depth == 1)
        #expect(stack.current.config.timeout == 9)
        stack.push { $0.config.timeout = 10 }  // the next change is numbered right after
        let observed = await collect(1, from: changes)
        #expect(observed.map(\.kind) == [.push])
    }

    @Test func pushWithAThrowingChangePushesNothing() {
        struct Boom: Error {}
        let stack = makeStack()
        #expect(throws: Boom.self) {
            try stack.push { (_: inout TestEnvironment) throws(Boom) in throw Boom() }
        }
        #expect(stack.depth == 1)
    }

    @Test func changeKindsAreComparedAndHashedByName() {
        let kinds: Set<EnvironmentChangeKind> = [.push, .push, .pop, .login, .accountSwitched]
        #expect(kinds.count == 4)
        #expect(kinds.contains(.accountSwitched) && !kinds.contains(.logout))
        #expect(EnvironmentChangeKind.configUpdated.description == "configUpdated")
    }

    @Test func replaceCurrentReplacesTheTopOnly() {
        let stack = makeStack()
        stack.push(makeEnvironment("mock"))
        stack.replaceCurrent { $0 = makeEnvironment("other") }
        #expect(stack.depth == 2)
        #expect(stack.current.services.label == "other")
        stack.replaceCurrent { $0.config.timeout = 1 }
        #expect(stack.current.config.timeout == 1)
        stack.pop()
        #expect(stack.current.services.label == "live")
        #expect(stack.current.config.timeout == 30)
    }

    @Test func replaceCurrentOnTheBaseReplacesTheBase() {
        let stack = makeStack()
        stack.replaceCurrent { $0 = makeEnvironment("new base") }
        #expect(stack.pop() == nil)
        #expect(stack.current.services.label == "new base")
    }

    @Test func loginSignsInAndHandsServicesTheToken() {
        let stack = makeStack()
        stack.login(user: .ada, token: AuthToken("abc"))
        #expect(stack.current.currentUser == .ada)
        #expect(stack.current.session?.state == .authenticated)
        #expect(stack.current.session?.token == AuthToken("abc"))
        #expect(stack.current.services.authorization == "Bearer abc")
        #expect(stack.depth == 1)
    }

    @Test func loginWhileLoggedInSwitchesUsers() {
        let stack = makeStack()
        stack.login(user: .ada, token: AuthToken("a"))
        stack.login(user: .grace, token: AuthToken("g"))
        #expect(stack.current.currentUser == .grace)
        #expect(stack.current.services.authorization == "Bearer g")
    }

    @Test func logoutEndsTheSessionAndClearsTheServicesToken() {
        let stack = makeStack()
        stack.login(user: .ada, token: AuthToken("abc"))
        let ended = stack.logout()
        #expect(ended?.user == .ada)
        #expect(stack.current.session == nil)
        #expect(stack.current.services.authorization == nil)
        #expect(stack.current.services.tokenChanges == 2)
    }

    @Test func logoutWhileLoggedOutIsANoOp() async {
        let stack = makeStack()
        let changes = stack.changes
        #expect(stack.logout() == nil)
        #expect(stack.current.services.tokenChanges == 0)
        stack.updateConfig { $0.timeout = 1 }
        let observed = await collect(1, from: changes)
        #expect(observed.map(\.kind) == [.configUpdated])
        #expect(observed.first?.sequence == 1)
    }

    @Test func updateCurrentUserKeepsTokenAndState() throws {
        let stack = makeStack()
        stack.login(user: .ada, token: AuthToken("abc"))
        try stack.updateCurrentUser(TestUser(id: 1, name: "Ada Lovelace"))
        #expect(stack.current.currentUser?.name == "Ada Lovelace")
        try stack.updateCurrentUser { $0.name += "!" }
        #expect(stack.current.currentUser?.name == "Ada Lovelace!")
        #expect(stack.current.session?.token.secret == "abc")
        #expect(stack.current.session?.state == .authenticated)
    }

    @Test func updateCurrentUserWhileLoggedOutThrowsAndChangesNothing() {
        let stack = makeStack()
        stack.updateConfig { $0.timeout = 5 }
        #expect(throws: SessionError.notLoggedIn(operation: "updateCurrentUser")) {
            try stack.updateCurrentUser(.ada)
        }
        #expect(throws: SessionError.notLoggedIn(operation: "updateCurrentUser")) {
            try stack.updateCurrentUser { $0.name = "X" }
        }
        #expect(stack.current.session == nil)
        #expect(stack.current.config.timeout == 5)
        #expect(stack.depth == 1)
    }

    @Test func updateConfigReplacesOrChangesTheConfig() {
        let stack = makeStack()
        stack.updateConfig(TestConfig(timeout: 1, features: ["x"]))
        #expect(stack.current.config == TestConfig(timeout: 1, features: ["x"]))
        stack.updateConfig { $0.features.insert("y") }
        #expect(stack.current.config.features == ["x", "y"])
    }

    @Test func transitionsApplyToTheTopAndPopWithIt() {
        let stack = makeStack()
        stack.push(makeEnvironment("mock"))
        stack.login(user: .ada, token: AuthToken("t"))
        #expect(stack.current.currentUser == .ada)
        stack.pop()
        #expect(stack.current.currentUser == nil)
    }

    /// A subscriber that doesn't read holds only what its buffering policy keeps.
    @Test func aBoundedChangeStreamKeepsOnlyTheNewest() async {
        let stack = makeStack()
        let latest = stack.changes(bufferingPolicy: .bufferingNewest(1))
        let oldest = stack.changes(bufferingPolicy: .bufferingOldest(2))
        for timeout in 1...5 { stack.updateConfig { $0.timeout = timeout } }
        stack.logout()   // nobody logged in: no change
        stack.login(user: .ada, token: AuthToken("t"))
        let kept = await collect(1, from: latest)
        #expect(kept.map(\.kind) == [.login], "only the newest change was kept")
        #expect(kept.first?.sequence == 6)
        let first = await collect(2, from: oldest)
        #expect(first.map(\.new.config.timeout) == [1, 2], "only the two oldest were kept")
    }

    @Test func changesReportEveryTransitionInOrderWithOldAndNew() async throws {
        let stack = makeStack()
        let changes = stack.changes
        stack.push { $0.services.label = "mock" }
        stack.login(user: .ada, token: AuthToken("t"))
        try stack.updateCurrentUser(.init(id: 1, name: "A"))
        stack.updateConfig { $0.timeout = 2 }
        stack.replaceCurrent { $0.locale = Locale(identifier: "fr_FR") }
        stack.logout()
        stack.pop()
        let observed = await collect(7, from: changes)
        #expect(observed.map(\.kind) == [.push, .login, .userUpdated, .configUpdated, .replace, .logout, .pop])
        #expect(observed.map(\.sequence) == Array(1...7))
        #expect(observed.map(\.depth) == [2, 2, 2, 2, 2, 2, 1])
        #expect(observed[0].old.services.label == "live")
        #expect(observed[0].new.services.label == "mock")
        #expect(observed[1].old.currentUser == nil)
        #expect(observed[1].new.currentUser == .ada)
        #expect(observed[2].new.currentUser?.name == "A")
        #expect(observed[3].old.config.timeout == 30)
        #expect(observed[3].new.config.timeout == 2)
        #expect(observed[5].old.currentUser?.name == "A")
        #expect(observed[5].new.currentUser == nil)
        #expect(observed[6].new.services.label == "live")
        #expect(observed.map(\.kind.description) == ["push", "login", "userUpdated", "configUpdated", "replace", "logout", "pop"])
    }

    @Test func everySubscriberGetsEveryChange() async {
        let stack = makeStack()
        let first = stack.changes
        let second = stack.changes
        for timeout in 1...20 { stack.updateConfig { $0.timeout = timeout } }
        async let a = collect(20, from: first)
        async let b = collect(20, from: second)
        let (x, y) = await (a, b)
        #expect(x.map(\.new.config.timeout) == Array(1...20))
        #expect(y.map(\.new.config.timeout) == Array(1...20))
    }

    @Test func aStreamSeesOnlyChangesAfterItWasCreated() async {
        let stack = makeStack()
        stack.updateConfig { $0.timeout = 1 }
        let changes = stack.changes
        stack.updateConfig { $0.timeout = 2 }
        let observed = await collect(1, from: changes)
        #expect(observed.first?.new.config.timeout == 2)
        #expect(observed.first?.sequence == 2)
    }

    @Test func stacksAreIndependent() {
        let a = makeStack("a")
        let b = makeStack("b")
        a.push { $0.config.timeout = 1 }
        a.login(user: .ada, token: AuthToken("t"))
        #expect(b.depth == 1)
        #expect(b.current.currentUser == nil)
        #expect(b.current.config.timeout == 30)
    }

    @Test func aChangeClosureMayReadTheStack() {
        let stack = makeStack()
        stack.push { $0.config.timeout = stack.current.config.timeout + 1 }
        stack.replaceCurrent { $0.config.timeout = stack.current.config.timeout * 10 }
        #expect(stack.current.config.timeout == 310)
    }

    @Test func readingAgainWhileABorrowedReadIsInProgressIsSafe() {
        // `current.services.work()` keeps the top borrowed while `work` runs; `work` pops that
        // very top and reads the stack again. The borrowed frame must stay alive until the
        // outer read ends.
        final class Probe: Sendable {
            let stack: EnvironmentStack<TestApp>
            init(_ stack: EnvironmentStack<TestApp>) { self.stack = stack }
            func popAndRead() -> String {
                stack.pop()
                return stack.current.services.label
            }
        }
        let stack = makeStack()
        let probe = Probe(stack)
        for round in 0..<100 {
            stack.push { $0.services.label = "mock \(round)" }
            #expect(stack.current.services.label.withCString { _ in probe.popAndRead() } == "live")
        }
        #expect(stack.depth == 1)
    }

    @Test func aPoppedFrameThatWasReadNeverShowsItsOldEnvironmentAgain() {
        // The pop hands the frame it removes to the next push when nothing else holds it, even
        // if this thread read it: every read must still see the environment pushed last.
        let stack = makeStack()
        for round in 0..<100 {
            stack.push { $0.services.label = "a\(round)" }
            #expect(stack.current.services.label == "a\(round)")
            #expect(stack.pop()?.services.label == "a\(round)")
            #expect(stack.current.services.label == "live")
            stack.push { $0.services.label = "b\(round)" }
            #expect(stack.current.services.label == "b\(round)")
            stack.pop()
        }
        #expect(stack.depth == 1)
        #expect(stack.current.services.label == "live")
    }

    @Test func aChangeRunsAgainOnlyWhenTheTopItCopiedIsGone() {
        let stack = makeStack()
        // A push and a pop while the change runs leave the same top: the change commits at once.
        var runs = 0
        stack.replaceCurrent { environment in
            runs += 1
            if runs == 1 {
                stack.push { $0.config.timeout = 99 }
                stack.pop()
            }
            environment.config.timeout += 1
        }
        #expect(runs == 1)
        #expect(stack.current.config.timeout == 31)

        // A replacement while the change runs is a new top: the change runs again on it.
        runs = 0
        stack.replaceCurrent { environment in
            runs += 1
            if runs == 1 { stack.updateConfig { $0.timeout = 50 } }
            environment.config.timeout += 1
        }
        #expect(runs == 2)
        #expect(stack.current.config.timeout == 51)
        #expect(stack.depth == 1)
    }

    @Test func aStackIsReadableFromManyThreads() async {
        let stack = makeStack()
        stack.updateConfig { $0.timeout = 42 }
        await withTaskGroup(of: Int.self) { group in
            for _ in 0..<8 {
                group.addTask { (0..<1000).reduce(0) { total, _ in total + stack.current.config.timeout } }
            }
            for await total in group { #expect(total == 42_000) }
        }
    }
}

/// A schema whose services can't conform to `SessionDependent` updates them itself.
private enum CustomTokenApp: EnvironmentSchema {
    typealias Services = [String]
    typealias User = TestUser
    typealias Config = TestConfig

    static func services(_ services: [String], for session: UserSession<TestUser>?) -> [String] {
        services + [session?.token == nil ? "cleared" : "token"]
    }
}

@Suite struct SessionServicesTests {
    @Test func aSchemaCanUpdateServicesItself() {
        let stack = EnvironmentStack<CustomTokenApp>(HabitatEnvironment(services: [], config: TestConfig()))
        stack.login(user: .ada, token: AuthToken("t"))
        stack.logout()
        #expect(stack.current.services == ["token", "cleared"])
    }

    /// One way to build an environment with a session, whatever the spelling: the initialiser,
    /// the setter and a preview all tell the services, once.
    @Test func everyWayToBuildASignedInEnvironmentTellsTheServices() {
        let session = UserSession(user: TestUser.ada, token: AuthToken("t"))
        let built = TestEnvironment(services: TestServices(), config: TestConfig(), session: session)
        var set = TestEnvironment(services: TestServices(), config: TestConfig())
        set.session = session
        let preview = TestEnvironment.preview(services: TestServices(), signedInAs: .ada)
        for environment in [built, set] {
            #expect(environment.services.token == AuthToken("t") && environment.services.userName == "Ada")
            #expect(environment.services.tokenChanges == 1)
        }
        #expect(preview.services.token == AuthToken("preview") && preview.services.tokenChanges == 1)
        let custom = HabitatEnvironment<CustomTokenApp>(services: [], config: TestConfig(), session: session)
        #expect(custom.services == ["token"])
        let signedOut = TestEnvironment(services: TestServices(label: "given", token: AuthToken("kept")), config: TestConfig())
        #expect(signedOut.services.token == AuthToken("kept") && signedOut.services.tokenChanges == 0, "no session: kept as given")
    }

    @Test func servicesThatIgnoreTheSessionAreLeftAlone() {
        enum Plain: EnvironmentSchema {
            typealias Services = Int
            typealias User = TestUser
            typealias Config = TestConfig
        }
        let stack = EnvironmentStack<Plain>(HabitatEnvironment(services: 7, config: TestConfig()))
        stack.login(user: .ada, token: AuthToken("t"))
        #expect(stack.current.services == 7)
        #expect(stack.current.currentUser == .ada)
    }
}
