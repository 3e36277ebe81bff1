import Foundation
import Habitat
import Hummingbird
import HabitatServerSessions
import HummingbirdTesting
import Logging
import ServerApp
import Testing

/// The example server, through Hummingbird's test client: each request sees only its own member.
@Suite struct ServerAppTests {
    struct Profile: Decodable, Equatable { var id: Int; var name: String; var greeting: String; var requestID: String }
    struct Projects: Decodable {
        var projects: [String]
        var fromTaskGroup: [String]
        var fromTask: String
        var fromDetachedTask: String
        var capturedForDetachedTask: String
    }
    struct Echo: Decodable { var sent: Int; var user: Int }
    struct ErrorBody: Decodable { struct Message: Decodable { var message: String }; var error: Message }

    /// This run's load-test secret: the tokens `tok-<id>-<secret>` exist only in load-test mode.
    static let secret = UUID().uuidString + UUID().uuidString

    func app(_ variant: Variant = .habitat) throws -> some ApplicationProtocol {
        try buildApplication(variant: variant, loadTestSecret: Self.secret, port: 0)
    }

    /// The load test's member `n`'s token (its id is ``loadTestMemberID(_:)``).
    func token(_ n: Int) -> String { loadTestToken(loadTestMemberID(n), secret: Self.secret) }

    func bearer(_ token: String) -> HTTPFields { [.authorization: "Bearer \(token)"] }

    func decode<T: Decodable>(_ type: T.Type, _ response: TestResponse) throws -> T {
        try JSONDecoder().decode(T.self, from: Data(buffer: response.body))
    }

    @Test func twoMembersAtOnceEachSeeOnlyThemselvesAcrossAwaitsAndHops() async throws {
        try await app().test(.router) { client in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for round in 0..<100 {
                    let n = round % 2 == 0 ? 11 : 12
                    group.addTask {
                        let profile = try await client.execute(uri: "/me", method: .get, headers: self.bearer(self.token(n)))
                        #expect(profile.status == .ok)
                        #expect(try self.decode(Profile.self, profile).id == loadTestMemberID(n))
                        let projects = try self.decode(Projects.self, try await client.execute(uri: "/projects", method: .get, headers: self.bearer(self.token(n))))
                        let name = "load-test-\(n)"
                        #expect(projects.projects == ["\(name)'s notes", "\(name)'s garden"], "read by a service after an await")
                        #expect(projects.fromTaskGroup == [name, name], "child tasks follow the request")
                        #expect(projects.fromTask == name, "an unstructured Task follows the request")
                        #expect(projects.fromDetachedTask == "nobody", "a detached task sees the base")
                        #expect(projects.capturedForDetachedTask == name, "unless the value is captured")
                    }
                }
                try await group.waitForAll()
            }
        }
    }

    @Test func theOpenAPIHandlerReadsTheMemberFromTheEnvironment() async throws {
        struct Me: Decodable { var id: Int; var name: String; var requestID: String }
        try await app().test(.router) { client in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for round in 0..<50 {
                    let n = 11 + round % 3
                    group.addTask {
                        let response = try await client.execute(uri: "/api/me", method: .get, headers: self.bearer(self.token(n)))
                        #expect(response.status == .ok)
                        let me = try self.decode(Me.self, response)
                        #expect(me.id == loadTestMemberID(n) && me.name == "load-test-\(n)")
                        #expect(!me.requestID.isEmpty, "the request's ID, bound with the environment")
                    }
                }
                try await group.waitForAll()
            }
            let refused = try await client.execute(uri: "/api/me", method: .get)
            #expect(refused.status == .unauthorized)
        }
    }

    @Test(arguments: Variant.allCases)
    func everyLoadVariantEchoesTheMemberItsTokenNames(_ variant: Variant) async throws {
        try await app(variant).test(.router) { client in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for id in 1...200 {
                    group.addTask {
                        let echo = try self.decode(Echo.self, try await client.execute(uri: "/load/me", method: .get, headers: self.bearer(self.token(id))))
                        #expect(echo.sent == loadTestMemberID(id))
                        #expect(echo.user == loadTestMemberID(id))
                    }
                }
                try await group.waitForAll()
            }
        }
    }

    @Test func noTokenIsA401WithAJSONError() async throws {
        try await app().test(.router) { client in
            let response = try await client.execute(uri: "/me", method: .get)
            #expect(response.status == .unauthorized)
            #expect(try decode(ErrorBody.self, response).error.message.contains("missing bearer token"))
        }
    }

    @Test func anUnknownOrExpiredTokenIsA401() async throws {
        let expired = appEnvironment.current.services.members.issueToken(for: 1, expiresAt: Date().addingTimeInterval(-1))
        try await app().test(.router) { client in
            for token in ["tok-nobody", expired.secret] {
                let response = try await client.execute(uri: "/me", method: .get, headers: bearer(token))
                #expect(response.status == .unauthorized)
                #expect(try decode(ErrorBody.self, response).error.message == "unknown or expired token")
            }
        }
    }

    @Test func aMalformedBodyIsA400SayingWhatWasWrong() async throws {
        try await app().test(.router) { client in
            let response = try await client.execute(uri: "/signin", method: .post, body: ByteBuffer(string: #"{"name": 1}"#))
            #expect(response.status == .badRequest)
            #expect(try decode(ErrorBody.self, response).error.message.contains("name"))
            let rename = try await client.execute(uri: "/me", method: .patch, headers: bearer(token(3)), body: ByteBuffer(string: "{}"))
            #expect(rename.status == .badRequest)
            #expect(try decode(ErrorBody.self, rename).error.message.contains("name"))
        }
    }

    @Test func signInThenUseTheTokenOverALiveServer() async throws {
        struct SignedIn: Decodable { var token: String }
        try await app().test(.live) { client in
            let signIn = try await client.execute(
                uri: "/signin", method: .post, body: ByteBuffer(string: #"{"name":"grace","password":"cobol"}"#)
            )
            #expect(signIn.status == .ok)
            let token = try decode(SignedIn.self, signIn).token
            let profile = try decode(Profile.self, try await client.execute(uri: "/me", method: .get, headers: bearer(token)))
            #expect(profile.id == 2)
            #expect(profile.greeting == "Welcome back, Grace")
            let wrong = try await client.execute(uri: "/signin", method: .post, body: ByteBuffer(string: #"{"name":"grace","password":"x"}"#))
            #expect(wrong.status == .unauthorized)
        }
    }

    @Test func aRenameIsSavedAndSeenOnlyByItsRequest() async throws {
        try await app().test(.router) { client in
            let renamed = try await client.execute(
                uri: "/me", method: .patch, headers: bearer(token(900)), body: ByteBuffer(string: #"{"name":"Nine Hundred"}"#)
            )
            #expect(try decode(Profile.self, renamed).name == "Nine Hundred")
            let other = try decode(Profile.self, try await client.execute(uri: "/me", method: .get, headers: bearer(token(901))))
            #expect(other.name == "load-test-901")
        }
        #expect(appEnvironment.current.currentUser == nil, "the update stayed in the request's scope")
    }

    @Test func outsideAnyRequestTheEnvironmentIsTheBase() async throws {
        try await app().test(.router) { client in
            _ = try await client.execute(uri: "/me", method: .get, headers: bearer(token(4)))
            #expect(appEnvironment.current.session == nil)
            #expect(appEnvironment.current.services.requestID == "-")
        }
    }

    // MARK: Fleet sessions (here on the memory backend; fleet.py runs three instances on PostgreSQL)

    struct SignedIn: Decodable { var token: String }
    struct VisitCount: Decodable { var visits: Int }

    func signIn(_ client: some TestClientProtocol, _ name: String, _ password: String) async throws -> String {
        let response = try await client.execute(uri: "/signin", method: .post, body: ByteBuffer(string: #"{"name":"\#(name)","password":"\#(password)"}"#))
        #expect(response.status == .ok)
        return try decode(SignedIn.self, response).token
    }

    @Test func aSessionCountsEveryConcurrentVisitKeepsARenameAndEndsAtSignOut() async throws {
        try await app().test(.router) { client in
            let token = try await signIn(client, "ada", "analytical")
            let counts = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<50 {
                    group.addTask {
                        try self.decode(VisitCount.self, try await client.execute(uri: "/me/visits", method: .post, headers: self.bearer(token))).visits
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(counts.sorted() == Array(1...50), "each visit counted once")
            let renamed = try await client.execute(uri: "/me", method: .patch, headers: bearer(token), body: ByteBuffer(string: #"{"name":"Ada L."}"#))
            #expect(try decode(Profile.self, renamed).name == "Ada L.")
            #expect(try decode(Profile.self, try await client.execute(uri: "/me", method: .get, headers: bearer(token))).name == "Ada L.", "the rename was saved in the session")
            #expect(try decode(VisitCount.self, try await client.execute(uri: "/me/visits", method: .post, headers: bearer(token))).visits == 51, "and kept the visits")
            #expect(try await client.execute(uri: "/signout", method: .post, headers: bearer(token)).status == .noContent)
            let after = try await client.execute(uri: "/me", method: .get, headers: bearer(token))
            #expect(after.status == .unauthorized)
        }
    }

    @Test func fleetRoutesNeedAFleetSessionAndAnUpstream() async throws {
        try await app().test(.router) { client in
            let directory = try await client.execute(uri: "/me/visits", method: .post, headers: bearer(token(5)))
            #expect(directory.status == .badRequest)
            #expect(try decode(ErrorBody.self, directory).error.message.contains("no fleet session"))
            let token = try await signIn(client, "grace", "cobol")
            let upstream = try await client.execute(uri: "/me/upstream", method: .get, headers: bearer(token))
            #expect(upstream.status == .notFound)
            #expect(try decode(ErrorBody.self, upstream).error.message.contains("--upstream"))
        }
    }

    /// A backend that can't be reached, as a database that went away.
    struct UnreachableBackend: SessionBackend {
        func create(id: String, data: Data, expiresIn: Duration) async throws(SessionBackendError) -> StoredSession { throw .unavailable("down") }
        func get(id: String) async throws(SessionBackendError) -> StoredSession? { throw .unavailable("down") }
        func set(id: String, data: Data, expiresIn: Duration, expectedVersion: Int64) async throws(SessionBackendError) -> StoredSession {
            throw .unavailable("down")
        }
        func remove(id: String) async throws(SessionBackendError) { throw .unavailable("down") }
        func set(id: String, data: Data, expiresIn: Duration, expectedVersion: Int64, fencedBy claim: LeaseClaim) async throws(SessionBackendError) -> StoredSession {
            throw .unavailable("down")
        }
        func remove(id: String, fencedBy claim: LeaseClaim) async throws(SessionBackendError) { throw .unavailable("down") }
        func acquireLease(_ name: String, holder: String, duration: Duration) async throws(SessionBackendError) -> Bool { throw .unavailable("down") }
        func releaseLease(_ name: String, holder: String) async throws(SessionBackendError) { throw .unavailable("down") }
        func recordAttempt(_ key: String, limit: Int, within window: Duration) async throws(SessionBackendError) -> Bool { throw .unavailable("down") }
        func forgetAttempts(_ key: String) async throws(SessionBackendError) { throw .unavailable("down") }
        func recordSession(_ id: String, owner: String, limit: Int) async throws(SessionBackendError) -> [String] { throw .unavailable("down") }
    }

    @Test func anUnreachableBackendIsA503NeverAMember() async throws {
        try await appEnvironment.withEnvironment({ $0.services.sessions = ServerSessions(backend: UnreachableBackend()) }) {
            try await app().test(.router) { client in
                let response = try await client.execute(uri: "/me", method: .get, headers: bearer("some-session-id"))
                #expect(response.status == .serviceUnavailable)
                let message = try decode(ErrorBody.self, response).error.message
                #expect(message.hasPrefix("sessions are unavailable, try again (request "))
                #expect(!message.contains("down"), "the backend's own words stay in the log")
                let signIn = try await client.execute(uri: "/signin", method: .post, body: ByteBuffer(string: #"{"name":"ada","password":"analytical"}"#))
                #expect(signIn.status == .serviceUnavailable)
                // The directory's own tokens don't need the backend.
                #expect(try await client.execute(uri: "/me", method: .get, headers: bearer(token(6))).status == .ok)
            }
        }
    }

    // MARK: Nothing lets anyone in

    @Test func withoutLoadTestModeNoGuessableTokenSignsAnyoneIn() async throws {
        // A directory and sessions of its own: the other tests run in load-test mode.
        try await appEnvironment.withEnvironment({
            $0.services.members = MemberDirectory()
            $0.services.sessions = ServerSessions(backend: MemorySessionBackend())
        }) {
            try await buildApplication(port: 0).test(.router) { client in
                for guess in ["tok-1", "tok-2", token(1), "tok-1-00000000000000000000000000000000"] {
                    let response = try await client.execute(uri: "/me", method: .get, headers: bearer(guess))
                    #expect(response.status == .unauthorized, "\(guess)")
                    let rename = try await client.execute(uri: "/me", method: .patch, headers: bearer(guess), body: ByteBuffer(string: #"{"name":"Mallory"}"#))
                    #expect(rename.status == .unauthorized)
                }
                #expect(try await client.execute(uri: "/load/me", method: .get, headers: bearer("tok-1")).status == .notFound)
            }
            #expect(appEnvironment.current.services.members.member(id: 1)?.name == "Ada")
        }
    }

    @Test func loadTestModeServesLoopbackOnlyWithALongSecret() {
        #expect(throws: ServerSetupError.self) { try buildApplication(loadTestSecret: Self.secret, host: "0.0.0.0", port: 0) }
        #expect(throws: ServerSetupError.self) { try buildApplication(loadTestSecret: "short", port: 0) }
        for lowVariety in [String(repeating: "a", count: 32), String(repeating: "ab", count: 24), String(repeating: "0123456", count: 6)] {
            #expect(throws: ServerSetupError.self) { try buildApplication(loadTestSecret: lowVariety, port: 0) }
            #expect(loadTestSecretProblem(lowVariety)?.contains("different characters") == true)
        }
        #expect(loadTestSecretProblem(Self.secret) == nil)
    }

    /// The load test's members are not the real ones: `tok-<real id>-<secret>` signs nobody in,
    /// and seeding leaves every real member as it was.
    @Test func loadTestAccountsAreApartFromRealOnes() async throws {
        let members = MemberDirectory()
        members.seedLoadTestMembers(1_000, secret: Self.secret)
        #expect(members.member(id: 1)?.name == "Ada" && members.member(id: 2)?.name == "Grace")
        #expect(members.member(forToken: loadTestToken(1, secret: Self.secret)) == nil, "Ada has no load-test token")
        #expect(members.member(forToken: loadTestToken(2, secret: Self.secret)) == nil)
        #expect(members.member(forToken: loadTestToken(loadTestMemberID(1), secret: Self.secret))?.name == "load-test-1")
        #expect(members.member(id: loadTestMemberID(1_000))?.name == "load-test-1000")
        try await app().test(.router) { client in
            let real = try await client.execute(uri: "/me", method: .get, headers: bearer(loadTestToken(1, secret: Self.secret)))
            #expect(real.status == .unauthorized)
        }
    }

    @Test func fiveAttemptsRefuseTheNameForAMinute() async throws {
        let members = MemberDirectory()
        let limits = MemorySessionBackend()
        for _ in 0..<MemberDirectory.failureLimit {
            #expect(try await members.signIn(name: "ada", password: "guess", limits: limits) == .refused)
        }
        #expect(try await members.signIn(name: "ada", password: "analytical", limits: limits) == .tooManyAttempts, "even the right password")
        #expect(try await members.signIn(name: "grace", password: "cobol", limits: limits) == .member(Member(id: 2, name: "Grace")), "other names are not affected")
        #expect(try await members.signIn(name: "nobody", password: "x", limits: limits) == .refused)
    }

    @Test func attemptsCountOnlyWithinTheWindowAndASuccessForgetsThem() async throws {
        let members = MemberDirectory()
        let limits = MemorySessionBackend()
        let window = Duration.seconds(1)
        for _ in 0..<MemberDirectory.failureLimit {
            _ = try await limits.recordAttempt("signin:ada", limit: MemberDirectory.failureLimit, within: window)
        }
        let recorded = ContinuousClock.now
        let refused = try await members.signIn(name: "ada", password: "analytical", limits: limits, window: window)
        if ContinuousClock.now - recorded < window { #expect(refused == .tooManyAttempts) }
        try await Task.sleep(until: recorded + window + .milliseconds(300))
        #expect(try await members.signIn(name: "ada", password: "analytical", limits: limits, window: window) == .member(Member(id: 1, name: "Ada")))
        #expect(try await limits.recordAttempt("signin:ada", limit: 1, within: .seconds(60)), "the success forgot the attempts")
    }

    /// The attempt is recorded before the hash: 40 wrong passwords at once get 5 tries, not 6
    /// (counted after the hash, 40 concurrent tries got 6 on 2 cores).
    @Test func fortyConcurrentWrongPasswordsGetFiveTries() async throws {
        let members = MemberDirectory(hashing: HashingPool(width: 2, queueLimit: 64))
        let limits = MemorySessionBackend()
        let results = await withTaskGroup(of: MemberDirectory.SignIn?.self) { group in
            for _ in 0..<40 {
                group.addTask { try? await members.signIn(name: "ada", password: "guess", limits: limits) }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.filter { $0 == .refused }.count == MemberDirectory.failureLimit)
        #expect(results.filter { $0 == .tooManyAttempts }.count == 40 - MemberDirectory.failureLimit)
    }

    /// Two instances sharing a backend share the limits: 12 tries on two instances give 5, not
    /// 12; a member's sessions are capped across both.
    @Test func twoInstancesSharingABackendShareTheLimits() async throws {
        let shared = MemorySessionBackend()
        let instances = [MemberDirectory(), MemberDirectory()]
        var refused = 0
        for round in 0..<12 where try await instances[round % 2].signIn(name: "grace", password: "guess", limits: shared) == .refused {
            refused += 1
        }
        #expect(refused == MemberDirectory.failureLimit)
        var ended: [String] = []
        for n in 1...12 {
            ended += try await instances[n % 2].noteSession("session-\(n)", for: 1, in: shared)
        }
        #expect(ended == ["session-1", "session-2"].map { StoredSession.key(for: $0) })
        #expect(try await instances[0].noteSession("other", for: 2, in: shared).isEmpty)
    }

    /// Hashes run on a bounded pool: past its queue a sign-in is refused at once, with a 503
    /// and `Retry-After`, and other requests are not held up.
    @Test func aFullHashingPoolRefusesASignInAtOnce() async throws {
        let pool = HashingPool(width: 1, queueLimit: 0)
        let started = LockedFlag(), gate = LockedFlag()
        let busy = Task { () -> Int in
            while true {
                let value = await pool.run {
                    started.set()
                    while !gate.isSet { usleep(1_000) }
                    return 1
                }
                if let value { return value }
                try? await Task.sleep(for: .milliseconds(1))
            }
        }
        while !started.isSet { try await Task.sleep(for: .milliseconds(1)) }   // the pool's one turn is taken
        #expect(await pool.run { 2 } == nil, "no room: refused at once")
        try await appEnvironment.withEnvironment({ $0.services.members = MemberDirectory(hashing: pool) }) {
            try await app().test(.router) { client in
                let response = try await client.execute(uri: "/signin", method: .post, body: ByteBuffer(string: #"{"name":"ada","password":"analytical"}"#))
                #expect(response.status == .serviceUnavailable)
                #expect(response.headers[.retryAfter] == "1")
                #expect(try await client.execute(uri: "/me", method: .get, headers: bearer(token(7))).status == .ok, "other requests go on")
            }
        }
        gate.set()
        #expect(await busy.value == 1)
        #expect(await pool.run { 3 } == 3, "a turn is free again")
    }

    @Test func signingInPastTheCapEndsTheOldestSession() async throws {
        // NB: sessions of its own: the cap, and the sign-in attempts, are counted in the backend,
        // which the other tests share.
        try await appEnvironment.withEnvironment({
            $0.services.members = MemberDirectory()
            $0.services.sessions = ServerSessions(backend: MemorySessionBackend())
        }) {
            try await app().test(.router) { client in
                var tokens: [String] = []
                for _ in 0...MemberDirectory.sessionLimit {
                    tokens.append(try await signIn(client, "grace", "cobol"))
                }
                #expect(try await client.execute(uri: "/me", method: .get, headers: bearer(tokens[0])).status == .unauthorized)
                #expect(try await client.execute(uri: "/me", method: .get, headers: bearer(tokens[1])).status == .ok)
            }
        }
    }

    @Test func upstreamTokensNeverPrint() {
        let session = MemberSession(
            member: Member(id: 1, name: "Ada"),
            upstream: UpstreamToken(accessToken: "access-4b1d", refreshToken: "refresh-7c2e", expiresAt: .distantFuture)
        )
        var dumped = ""
        dump(session, to: &dumped)
        for text in [dumped, "\(session)", String(reflecting: session)] {
            #expect(!text.contains("access-4b1d") && !text.contains("refresh-7c2e"), "\(text)")
        }
    }
}

/// No printing path (`print`, `debugPrint`, `dump`, `String(reflecting:)`, a `Mirror` walk) of
/// the example's services, or of the environment and the stack that hold them, shows a bearer
/// token, the load-test secret, a session ID or the request's whole ID.
@Suite struct ServicesRedactionTests {
    @Test func theServicesTheirEnvironmentAndTheStackPrintNoCredential() async throws {
        let secret = "load-test-secret-" + UUID().uuidString
        let members = MemberDirectory()
        members.seedLoadTestMembers(3, secret: secret)
        let issued = members.issueToken(for: 1, expiresAt: nil)
        let sessions = ServerSessions<MemberSession>(backend: MemorySessionBackend())
        let session = try await sessions.create(MemberSession(member: Member(id: 1, name: "Ada"), upstream: UpstreamToken(accessToken: "", refreshToken: "r0", expiresAt: .distantPast)))
        let requestID = "request-" + UUID().uuidString
        let services = ServerServices(members: members, projects: ProjectCatalog(), sessions: sessions, requestID: requestID, logger: Logger(label: "probe"))
        let stack = EnvironmentStack<ServerApp>(HabitatEnvironment(services: services, config: ServerConfig()))
        stack.login(user: Member(id: 1, name: "Ada"), token: issued)
        let hidden = [secret, issued.secret, session.id, requestID]
        for value in [members, services, stack.current, stack] as [Any] {
            var dumped = ""
            dump(value, to: &dumped)
            let mirrored = Mirror(reflecting: value).children.map { "\($0.label ?? ""): \($0.value)" }.joined(separator: ", ")
            for text in [dumped, "\(value)", String(reflecting: value), mirrored] {
                for credential in hidden {
                    #expect(!text.contains(credential), "\(type(of: value)) shows a credential")
                }
            }
        }
    }
}

/// A flag one task sets and another polls.
final class LockedFlag: @unchecked Sendable {
    // Safe: `value` is read and written only with `lock` held.
    private let lock = NSLock()
    private var value = false

    var isSet: Bool { lock.withLock { value } }
    func set() { lock.withLock { value = true } }
}
