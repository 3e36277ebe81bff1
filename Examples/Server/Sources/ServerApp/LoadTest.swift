import Dependencies
import Foundation
import Habitat
import HabitatHummingbird
import HabitatPostgres
import HabitatServerSessions
public import Hummingbird
import Logging
import NIOCore
import PostgresNIO
import Synchronization

// The load test's route, `GET /load/me`, five ways. Every variant does the same work: its
// middleware resolves the bearer token to a member, makes the request's ID, logger and clock,
// and binds them its own way; its handler reads the member, the request ID and the clock (three
// reads), awaits, reads the member again, and echoes the member it read beside the member the
// sent token names. Only how the values travel differs.

/// How the load route passes per-request values.
public enum Variant: String, CaseIterable, Sendable {
    /// As fields of Hummingbird's `RequestContext`: the framework's own idiom, and the floor.
    case floor
    /// In one bare `@TaskLocal` holding a struct.
    case tasklocal
    /// With swift-dependencies' `withDependencies`, read through `@Dependency`.
    case swiftDependencies = "swift-dependencies"
    /// In a Habitat scope, read through `appEnvironment.current`.
    case habitat
    /// In a Habitat scope, `Logger.current` and `ServiceContext.current`, bound in one step by
    /// the add-on's `HabitatRequestMiddleware`.
    case habitatBound = "habitat-bound"
    /// In a Habitat scope, the member read from the fleet's session backend (`--backend`): one
    /// backend read per request (`load.sh --postgres` runs it on PostgreSQL). The tokens
    /// `tok-N-<secret>` are session IDs then, not the directory's.
    case habitatSessions = "habitat-sessions"
}

/// A request's values, for the variants that don't use Habitat.
public struct RequestValues: Sendable {
    public var member: Member
    public var requestID: String
    public var logger: Logger
    public var started: Date
}

/// How many responses answered a different member than their token names, since the start.
let mismatchCount = Atomic<Int>(0)

/// The values a variant's middleware binds: the same work in every variant (the Habitat
/// middleware does the same, building an environment instead).
func resolve(_ request: Request) throws -> RequestValues {
    guard let token = request.bearerToken else { throw HTTPError(.unauthorized, message: "missing bearer token") }
    let base = appEnvironment.current
    guard let member = base.services.members.member(forToken: token) else { throw HTTPError(.unauthorized, message: "unknown token") }
    let requestID = request.newRequestID()
    var logger = base.services.logger
    logger[metadataKey: "request_id"] = "\(requestID)"
    return RequestValues(member: member, requestID: requestID, logger: logger, started: Date())
}

/// The handler's shared work. `read` reads the member, the request ID and the clock the
/// variant's way.
func echo(_ request: Request, read: () -> (member: Member?, requestID: String?, now: Date?)) async -> Response {
    let first = read()
    await Task.yield()   // as a database call would suspend; the request may resume on another thread
    let member = read().member
    let sent = request.bearerToken.flatMap { Int($0.dropFirst("tok-".count).prefix { $0 != "-" }) } ?? -1
    if member?.id != sent { mismatchCount.add(1, ordering: .relaxed) }
    let at = Int(first.now?.timeIntervalSince1970 ?? 0)
    let body = #"{"sent":\#(sent),"user":\#(member?.id ?? -1),"request":"\#(first.requestID ?? "")","at":\#(at)}"#
    return Response(
        status: .ok,
        headers: [.contentType: "application/json"],
        body: .init(byteBuffer: ByteBuffer(string: body))
    )
}

// MARK: The variants' middleware

/// The floor variant's context: the app's, plus the request's values, passed by hand.
struct FloorRequestContext: ChildRequestContext {
    var coreContext: CoreRequestContextStorage
    var values: RequestValues?

    init(context: AppRequestContext) {
        coreContext = context.coreContext
    }
}

struct FloorMiddleware: RouterMiddleware {
    typealias Context = FloorRequestContext
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        context.values = try resolve(request)
        return try await next(request, context)
    }
}

enum RequestScope {
    @TaskLocal static var values: RequestValues?
}

struct TaskLocalMiddleware: RouterMiddleware {
    typealias Context = AppRequestContext
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        try await RequestScope.$values.withValue(try resolve(request)) { try await next(request, context) }
    }
}

private enum RequestValuesKey: DependencyKey {
    static let liveValue: RequestValues? = nil
}

extension DependencyValues {
    var request: RequestValues? {
        get { self[RequestValuesKey.self] }
        set { self[RequestValuesKey.self] = newValue }
    }
}

struct DependenciesMiddleware: RouterMiddleware {
    typealias Context = AppRequestContext
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let values = try resolve(request)
        return try await withDependencies { $0.request = values } operation: { try await next(request, context) }
    }
}

// MARK: The application

/// The app's routes, plus the load route of `variant` and `GET /stats` (the mismatch count).
public func buildLoadRouter(variant: Variant) throws -> Router<AppRequestContext> {
    let router = try buildRouter()
    router.get("stats") { _, _ in "{\"mismatches\":\(mismatchCount.load(ordering: .relaxed))}" }
    let load = router.group("load")
    switch variant {
    case .floor:
        router.group("load", context: FloorRequestContext.self).add(middleware: FloorMiddleware()).get("me") { request, context in
            await echo(request) { (context.values?.member, context.values?.requestID, context.values?.started) }
        }
    case .tasklocal:
        load.add(middleware: TaskLocalMiddleware()).get("me") { request, _ in
            await echo(request) { (RequestScope.values?.member, RequestScope.values?.requestID, RequestScope.values?.started) }
        }
    case .swiftDependencies:
        load.add(middleware: DependenciesMiddleware()).get("me") { request, _ in
            @Dependency(\.request) var values
            return await echo(request) { (values?.member, values?.requestID, values?.started) }
        }
    case .habitat, .habitatSessions:
        load.add(middleware: RequestEnvironmentMiddleware()).get("me") { request, _ in
            await echo(request) {
                (appEnvironment.current.currentUser, appEnvironment.current.services.requestID, appEnvironment.current.now())
            }
        }
    case .habitatBound:
        load.add(middleware: boundMiddleware).get("me") { request, _ in
            await echo(request) {
                (appEnvironment.current.currentUser, RequestID.current?.description, appEnvironment.current.now())
            }
        }
    }
    return router
}

/// The add-on's middleware doing the work of the others: the member signed in, the request's
/// ID (given by the middleware), its logger's metadata and its clock.
let boundMiddleware = HabitatRequestMiddleware<AppRequestContext, ServerApp>(stack: appEnvironment) { request, _, binding in
    guard let token = request.bearerToken else { throw HTTPError(.unauthorized, message: "missing bearer token") }
    guard let member = binding.environment.services.members.member(forToken: token) else {
        throw HTTPError(.unauthorized, message: "unknown token")
    }
    let started = Date()
    binding.environment.session = UserSession(user: member, token: AuthToken(token))
    binding.environment.now = { started }
    binding.logger[metadataKey: "member"] = "\(member.id)"
}

/// Why the server can't start as asked.
public struct ServerSetupError: Error, CustomStringConvertible {
    public var description: String
}

/// The shortest load-test secret accepted: 32 characters (128 bits as hex).
public let loadTestSecretMinimumLength = 32

/// The fewest different characters a load-test secret may have: a random hex secret of 32
/// characters has about 14; 32 x `a`, or `abab...`, is refused.
public let loadTestSecretMinimumVariety = 8

/// Why `secret` can't be a load-test secret, or `nil` when it can: long enough
/// (``loadTestSecretMinimumLength``) and varied enough (``loadTestSecretMinimumVariety``).
public func loadTestSecretProblem(_ secret: String) -> String? {
    if secret.count < loadTestSecretMinimumLength {
        return "the load-test secret must be at least \(loadTestSecretMinimumLength) characters"
    }
    if Set(secret).count < loadTestSecretMinimumVariety {
        return "the load-test secret must have at least \(loadTestSecretMinimumVariety) different characters: use random ones"
    }
    return nil
}

/// Where the fleet's sessions live.
public enum BackendChoice: Sendable, Equatable {
    /// In this process's memory: one instance.
    case memory
    /// In the PostgreSQL database at `url` (`postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE`),
    /// shared by every instance started with it.
    case postgres(url: String)
}

/// How often each instance purges the fleet's expired sessions.
public let sessionPurgeInterval = Duration.seconds(600)

/// The server: the app on `host`:`port`, its sessions in `backend` (purged of expired ones
/// every `sessionPurgeInterval`), its members' upstream tokens refreshed at `upstream` (under
/// fleet-wide leases of `refreshLease`). With `sessionCache` (PostgreSQL only), each instance
/// keeps the sessions it serves, kept coherent by the database's change feed
/// (`CachedSessionBackend`).
///
/// With a `loadTestSecret` (load-test mode, loopback only), it also serves the load route of
/// `variant` and `GET /stats`, and the load test's 1,000 members (``loadTestMemberID(_:)``, apart
/// from the real ones) sign in with the bearer tokens `tok-<id>-<loadTestSecret>`
/// (``loadTestToken(_:secret:)``). Without one, no such token exists: members sign in with their
/// passwords.
/// - Throws: ``ServerSetupError`` for load-test mode on an address that isn't loopback, or with
///   a secret that is short or of low variety (``loadTestSecretProblem(_:)``).
public func buildApplication(
    variant: Variant = .habitat,
    loadTestSecret: String? = nil,
    host: String = "127.0.0.1",
    port: Int = 8080,
    backend: BackendChoice = .memory,
    upstream: URL? = nil,
    refreshLease: Duration = .seconds(15),
    sessionCache: Bool = false
) throws -> some ApplicationProtocol {
    if let loadTestSecret {
        guard ["127.0.0.1", "::1", "localhost"].contains(host) else {
            throw ServerSetupError(description: "load-test mode serves loopback only, not \(host)")
        }
        if let problem = loadTestSecretProblem(loadTestSecret) {
            throw ServerSetupError(description: problem)
        }
        appEnvironment.current.services.members.seedLoadTestMembers(1_000, secret: variant == .habitatSessions ? nil : loadTestSecret)
    }
    var client: PostgresClient?
    if case .postgres(let url) = backend {
        var configuration = try PostgresSessionBackend.configuration(url: url)
        // A database that went away answers within seconds (503), not a request timeout later.
        configuration.options.connectTimeout = .seconds(2)
        client = PostgresClient(configuration: configuration)
    }
    var cache: CachedSessionBackend?
    if let client, sessionCache {
        let logger = appEnvironment.current.services.logger
        cache = CachedSessionBackend(PostgresSessionBackend(client: client, timeout: .seconds(2)), changes: PostgresSessionChanges(client: client)) {
            logger.warning("the session cache is off until its change feed is back: \($0)")
        }
    }
    if client != nil || upstream != nil {
        appEnvironment.replaceCurrent(label: "fleet") { environment in
            if let cache {
                environment.services.sessions = ServerSessions(backend: cache)
            } else if let client {
                environment.services.sessions = ServerSessions(backend: PostgresSessionBackend(client: client, timeout: .seconds(2)))
            }
            environment.services.upstream = upstream.map { UpstreamClient(url: $0) }
            environment.services.refreshLease = refreshLease
        }
    }
    var app = Application(
        router: try loadTestSecret == nil ? buildRouter() : buildLoadRouter(variant: variant),
        configuration: .init(address: .hostname(host, port: port), serverName: "habitat-server")
    )
    let services = appEnvironment.current.services
    app.addServices(SessionPurge(sessions: services.sessions, interval: sessionPurgeInterval, logger: services.logger))
    if let client {
        app.addServices(client)
        if let cache { app.addServices(SessionCacheFeed(cache: cache)) }
        app.beforeServerStarts {
            try await PostgresSessionBackend(client: client).migrate()
        }
    }
    if variant == .habitatSessions, let loadTestSecret {
        app.beforeServerStarts { try await seedLoadTestSessions(1_000, secret: loadTestSecret) }
    }
    return app
}

/// Sessions `tok-<id>-<secret>` for the load test's members 1...count, in the fleet's backend;
/// those a run before left are kept.
func seedLoadTestSessions(_ count: Int, secret: String) async throws {
    let services = appEnvironment.current.services
    let stale = UpstreamToken(accessToken: "", refreshToken: "-", expiresAt: .distantPast)
    for n in 1...count {
        let id = loadTestMemberID(n)
        guard let member = services.members.member(id: id) else { continue }
        let value = try JSONEncoder().encode(MemberSession(member: member, upstream: stale))
        do {
            _ = try await services.sessions.backend.create(id: StoredSession.key(for: loadTestToken(id, secret: secret)), data: value, expiresIn: .seconds(86_400))
        } catch .duplicateID {}
    }
}
