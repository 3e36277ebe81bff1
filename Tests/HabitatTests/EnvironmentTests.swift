import Foundation
import Habitat
import HabitatPersistence
import Testing

@Suite struct EnvironmentTests {
    @Test func defaultsAreLiveAndLoggedOut() {
        let env = HabitatEnvironment<TestApp>(services: TestServices(), config: TestConfig())
        #expect(env.session == nil)
        #expect(env.currentUser == nil)
        #expect(abs(env.now().timeIntervalSinceNow) < 60)
        #expect(env.uuid() != env.uuid())
    }

    @Test func worldValuesAreOverridable() {
        let ids = [UUID(), UUID()]
        let env = makeEnvironment()
            .with(\.uuid, { ids[0] })
            .with(\.calendar, Calendar(identifier: .iso8601))
        #expect(env.now() == fixedDate)
        #expect(env.uuid() == ids[0])
        #expect(env.locale.identifier == "en_US_POSIX")
        #expect(env.timeZone.secondsFromGMT() == 0)
        #expect(env.calendar.identifier == .iso8601)
    }

    @Test func withSetsOneFieldAndLeavesTheOriginal() {
        let env = makeEnvironment()
        let german = env.with(\.locale, Locale(identifier: "de_DE"))
        #expect(german.locale.identifier == "de_DE")
        #expect(env.locale.identifier == "en_US_POSIX")
        #expect(german.config == env.config)
    }

    /// The five system values live in objects that copies share (the clock and UUIDs in one,
    /// the calendar, locale and time zone in another): setting one on a copy must leave the
    /// original, and the copy's other four, as they were.
    @Test func settingASystemValueOnACopyLeavesTheOriginal() {
        let original = makeEnvironment()
        var copy = original
        let id = UUID()
        copy.now = { Date(timeIntervalSince1970: 1) }
        copy.uuid = { id }
        copy.calendar = Calendar(identifier: .buddhist)
        copy.timeZone = TimeZone(identifier: "Asia/Tokyo")!
        #expect(original.now() == fixedDate)
        #expect(original.uuid() != id)
        #expect(original.calendar.identifier != .buddhist)
        #expect(original.timeZone.secondsFromGMT() == 0)
        #expect(original.locale.identifier == "en_US_POSIX")
        #expect(copy.now() == Date(timeIntervalSince1970: 1))
        #expect(copy.uuid() == id)
        #expect(copy.calendar.identifier == .buddhist)
        #expect(copy.timeZone.identifier == "Asia/Tokyo")
        #expect(copy.locale.identifier == "en_US_POSIX")
    }

    /// Scopes and writes copy the environment field by field (a specialised copy, see
    /// `fieldwiseCopy`); a field that copy forgot would come out reset. Every way in keeps all
    /// of them.
    @Test func everyCopyKeepsEveryField() async throws {
        let id = UUID()
        var base = makeEnvironment("kept")
        base.session = UserSession(user: .ada, token: AuthToken("t-ada", expiresAt: fixedDate))
        base.otherAccounts = [UserSession(user: .grace, token: AuthToken("t-grace"))]
        base.config = TestConfig(timeout: 7, features: ["beta"])
        base.uuid = { id }
        base.calendar = Calendar(identifier: .buddhist)
        base.locale = Locale(identifier: "de_DE")
        base.timeZone = TimeZone(identifier: "Asia/Tokyo")!
        func expectAll(_ env: TestEnvironment, _ way: String) {
            #expect(env.session == base.session, "\(way)")
            #expect(env.otherAccounts == base.otherAccounts, "\(way)")
            #expect(env.config == base.config, "\(way)")
            #expect(env.services.label == "kept" && env.services.userName == "Ada", "\(way)")
            #expect(env.now() == fixedDate && env.uuid() == id, "\(way)")
            #expect(env.calendar.identifier == .buddhist, "\(way)")
            #expect(env.locale.identifier == "de_DE" && env.timeZone.identifier == "Asia/Tokyo", "\(way)")
        }
        let stack = EnvironmentStack(base)
        stack.withEnvironment({ _ in }) { expectAll(stack.current, "a scope changing nothing") }
        stack.withEnvironment(base) { expectAll(stack.current, "a scope from a whole environment") }
        // NB: the operations await, or these would be the synchronous forms again.
        await stack.withEnvironment({ _ in await Task.yield() }) {
            await Task.yield()
            expectAll(stack.current, "an async scope")
        }
        await stack.withEnvironment(base) {
            await Task.yield()
            expectAll(stack.current, "an async scope from a whole environment")
        }
        stack.push { _ in }
        expectAll(stack.current, "a push changing nothing")
        stack.updateConfig { _ in }
        expectAll(stack.current, "an update changing nothing")
        expectAll(try #require(stack.pop()), "the popped frame")
    }

    @Test func overTransformsOneField() {
        let env = makeEnvironment().over(\.config.timeout) { $0 * 2 }
        #expect(env.config.timeout == 60)
    }

    @Test func overRethrowsTypedErrors() {
        struct Boom: Error, Equatable {}
        #expect(throws: Boom.self) {
            _ = try makeEnvironment().over(\.config.timeout) { (_) throws(Boom) -> Int in throw Boom() }
        }
    }

    @Test func valueTransitions() throws {
        let env = makeEnvironment()
        let inside = env.with(\.session, UserSession(user: .ada, token: AuthToken("abc")))
        #expect(inside.currentUser == .ada)
        #expect(inside.session?.state == .authenticated)
        #expect(inside.services.authorization == "Bearer abc")
        let renamed = inside.over(\.session) { $0.map { UserSession(user: TestUser(id: 1, name: "Ada L."), token: $0.token, state: $0.state) } }
        #expect(renamed.currentUser?.name == "Ada L.")
        #expect(renamed.session?.token.secret == "abc")
        #expect(renamed.services.userName == "Ada L.", "setting the session through a key path tells the services")
        let outside = renamed.with(\.session, nil)
        #expect(outside.session == nil)
        #expect(outside.services.authorization == nil)
    }

    @Test func inPlaceTransitionsMatchTheKeyPathUpdaterAndTellTheServices() throws {
        var env = makeEnvironment()
        env.session = UserSession(user: .ada, token: AuthToken("abc"))
        #expect(env.session == makeEnvironment().with(\.session, UserSession(user: .ada, token: AuthToken("abc"))).session)
        #expect(env.services.authorization == "Bearer abc", "services are told, as by the key path")
        env.session?.user = TestUser(id: 1, name: "Ada L.")
        #expect(env.currentUser?.name == "Ada L.")
        #expect(env.services.userName == "Ada L.")
        env.session = nil
        #expect(env.session == nil)
        #expect(env.services.authorization == nil)
        env.session?.user = .ada
        #expect(env.session == nil, "changing the user of nobody signs nobody in")
    }

    @Test func sessionErrorNamesTheOperation() {
        let error = SessionError.notLoggedIn(operation: "updateCurrentUser")
        #expect(error.description == "updateCurrentUser needs a signed-in user, but nobody is logged in")
    }
}

@Suite struct AccessTokenTests {
    let secret = "tok-7f3a9c-SECRET"

    @Test func expiry() {
        let now = Date(timeIntervalSince1970: 1000)
        #expect(!AuthToken(secret).isExpired(at: now))
        #expect(!AuthToken(secret, expiresAt: now.addingTimeInterval(1)).isExpired(at: now))
        #expect(AuthToken(secret, expiresAt: now).isExpired(at: now))
        #expect(AuthToken(secret, expiresAt: now.addingTimeInterval(-1)).isExpired(at: now))
        let session = UserSession(user: TestUser.ada, token: AuthToken(secret, expiresAt: now))
        #expect(session.isExpired(at: now))
    }

    @Test func secretIsReadableOnPurpose() {
        #expect(AuthToken(secret).secret == secret)
    }

    @Test(arguments: [Date?.none, Date(timeIntervalSince1970: 0)])
    func noDescriptionShowsTheSecret(expiry: Date?) {
        let token = AuthToken(secret, expiresAt: expiry)
        var dumped = ""
        dump(token, to: &dumped)
        let env = makeEnvironment().with(\.session, UserSession(user: .ada, token: token))
        var dumpedEnvironment = ""
        dump(env, to: &dumpedEnvironment)
        let renderings = [
            token.description, "\(token)", String(reflecting: token), dumped,
            String(describing: env), String(reflecting: env), String(describing: env.session), dumpedEnvironment,
            String(describing: Mirror(reflecting: token).children.map { "\($0.label ?? ""): \($0.value)" }),
        ]
        for rendering in renderings {
            #expect(!rendering.contains(secret), "leaked in: \(rendering)")
        }
        #expect(token.description.contains("<redacted>"))
        #expect(dumped.contains("<redacted>"))
    }
}
