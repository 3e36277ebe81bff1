import Foundation
import Habitat
import HabitatServerSessions
public import Hummingbird

/// What `POST /signin` takes.
struct SignIn: Decodable {
    var name: String
    var password: String
}

/// What `POST /signin` answers.
struct SignedIn: ResponseEncodable {
    var token: String
    var expiresAt: Date?
}

/// A member's profile, as `GET /me` answers it.
struct Profile: ResponseEncodable {
    var id: Int
    var name: String
    var greeting: String
    var requestID: String
    var servedAt: Date
}

/// What `PATCH /me` takes.
struct Rename: Decodable {
    var name: String
}

/// What `GET /projects` answers: the projects, as read in each place the request hopped to.
struct Projects: ResponseEncodable {
    /// Read by the project catalog, called from the handler.
    var projects: [String]
    /// Read in two child tasks of a task group: they inherit the request's scope.
    var fromTaskGroup: [String]
    /// Read in an unstructured `Task {}`: it inherits the request's scope too.
    var fromTask: String
    /// Read in a `Task.detached`: it does not; the member must be captured and passed in.
    var fromDetachedTask: String
    var capturedForDetachedTask: String
}

/// What `POST /me/visits` answers: the session's count, after this visit.
struct Visits: ResponseEncodable {
    var visits: Int
}

/// What `GET /me/upstream` answers: a fresh upstream access token for the member.
struct Upstream: ResponseEncodable {
    var accessToken: String
    var expiresAt: Date
}

/// The app: `POST /signin` is public; `/me`, `/projects` and `/signout` run in the request's
/// environment.
public func buildRouter() throws -> Router<AppRequestContext> {
    let router = Router(context: AppRequestContext.self)
    router.post("signin") { request, context -> SignedIn in
        let body = try await request.decode(as: SignIn.self, context: context)
        let services = appEnvironment.current.services
        let member: Member
        switch try await fleet({ try await services.members.signIn(name: body.name, password: body.password, limits: services.sessions.backend) }) {
        case .member(let found): member = found
        case .refused: throw HTTPError(.unauthorized, message: "wrong name or password")
        case .tooManyAttempts: throw HTTPError(.tooManyRequests, message: "too many sign-ins for this name: try again in a minute")
        case .busy: throw HTTPError(.serviceUnavailable, headers: [.retryAfter: "1"], message: "too many sign-ins at once: try again in a second")
        }
        // The session every instance will know the member by. The upstream token arrives with
        // a refresh token only: the first `GET /me/upstream` spends it.
        let upstream = UpstreamToken(accessToken: "", refreshToken: "r0-\(UUID().uuidString)", expiresAt: .distantPast)
        let session = try await fleet { try await services.sessions.create(MemberSession(member: member, upstream: upstream)) }
        // A member holds at most `MemberDirectory.sessionLimit` sessions across the fleet: the
        // oldest past it end now.
        let backend = services.sessions.backend
        for old in try await fleet({ try await services.members.noteSession(session.id, for: member.id, in: backend) }) {
            try? await backend.remove(id: old)
        }
        return SignedIn(token: session.id, expiresAt: Date().addingTimeInterval(Double(services.sessions.lifetime.components.seconds)))
    }
    let signedIn = router.group().add(middleware: RequestEnvironmentMiddleware())
    signedIn.get("me") { _, _ in try profile() }
    signedIn.patch("me") { request, context -> Profile in
        let body = try await request.decode(as: Rename.self, context: context)
        guard !body.name.isEmpty else { throw HTTPError(.badRequest, message: "name must not be empty") }
        guard var member = appEnvironment.current.currentUser else { throw HTTPError(.unauthorized) }
        member.name = body.name
        try appEnvironment.updateCurrentUser(member)   // in this request's scope; the middleware saves it
        return try profile()
    }
    signedIn.get("projects") { _, _ in await projects() }
    signedIn.post("me/visits") { _, _ -> Visits in
        let (sessions, id) = try fleetSessionOfRequest()
        let session = try await fleet { try await sessions.update(id) { $0.visits += 1 } }
        return Visits(visits: session.value.visits)
    }
    signedIn.get("me/upstream") { _, _ -> Upstream in
        let (sessions, id) = try fleetSessionOfRequest()
        guard let upstream = appEnvironment.current.services.upstream else {
            throw HTTPError(.notFound, message: "this server has no upstream (start it with --upstream URL)")
        }
        let lease = appEnvironment.current.services.refreshLease
        let session = try await fleet {
            try await sessions.refresh(id, lease: lease, when: { $0.upstream.isStale(at: Date()) }) { session in
                try await upstream.refresh(session.upstream)
            } apply: { session, fresh in
                session.upstream = fresh
            }
        }
        return Upstream(accessToken: session.value.upstream.accessToken, expiresAt: session.value.upstream.expiresAt)
    }
    signedIn.post("signout") { _, _ -> HTTPResponse.Status in
        let (sessions, id) = try fleetSessionOfRequest()
        try await fleet { try await sessions.remove(id) }
        return .noContent
    }
    try addOpenAPIRoutes(to: router)
    return router
}

/// The fleet's sessions and the request's session ID; 400 for a request signed in with one of
/// the directory's own tokens, which has no fleet session.
func fleetSessionOfRequest() throws -> (ServerSessions<MemberSession>, String) {
    let environment = appEnvironment.current
    guard let token = environment.session?.token.secret, environment.services.members.member(forToken: token) == nil else {
        throw HTTPError(.badRequest, message: "this token has no fleet session: sign in with POST /signin")
    }
    return (environment.services.sessions, token)
}

/// Runs a session operation, answering what went wrong as HTTP: 503 when the backend can't be
/// reached, 401 when the session is gone (or was ended because its refresh's outcome is
/// unknown), 409 when it kept changing under the update, 502 when the upstream failed.
///
/// A response says what happened in a fixed sentence and names the request; the details (which
/// may name the database or carry the upstream's words) go to the server's log, under the same
/// request ID. Session IDs are shortened in both.
func fleet<R>(_ operation: () async throws -> R) async throws -> R {
    do {
        return try await operation()
    } catch let error as SessionBackendError {
        switch error {
        case .unavailable, .refreshWaitTimedOut: throw failure(.serviceUnavailable, "sessions are unavailable, try again", error)
        case .sessionGone, .versionConflict: throw failure(.unauthorized, "the session has ended: sign in again", error)
        case .refreshTimedOut: throw failure(.unauthorized, "the upstream did not answer in time: sign in again", error)
        case .refreshUnconfirmed: throw failure(.unauthorized, "the session's refresh can't be confirmed: sign in again", error)
        case .tooMuchContention, .leaseLapsed: throw failure(.conflict, "the session changed meanwhile, try again", error)
        case .duplicateID, .undecodable: throw failure(.internalServerError, "the session can't be read", error)
        }
    } catch let error as UpstreamClient.Failure {
        throw failure(.badGateway, "the upstream refused the refresh", error)
    } catch let error as URLError {
        throw failure(.badGateway, "the upstream can't be reached", error)
    }
}

/// An error response with `message` and the request's ID; `error` is logged under that ID.
func failure(_ status: HTTPResponse.Status, _ message: String, _ error: any Error) -> HTTPError {
    let environment = appEnvironment.current
    environment.services.logger.error("\(message)", metadata: ["error": "\(error)"])
    return HTTPError(status, message: "\(message) (request \(environment.services.requestID))")
}

/// The signed-in member's profile, from the request's environment.
func profile() throws -> Profile {
    let environment = appEnvironment.current
    guard let member = environment.currentUser else { throw HTTPError(.unauthorized) }
    environment.services.logger.debug("profile of \(member.id)")
    return Profile(
        id: member.id,
        name: member.name,
        greeting: "\(environment.config.greeting), \(member.name)",
        requestID: environment.services.requestID,
        servedAt: environment.now()
    )
}

/// Hops on purpose, to show what follows the request and what needs capturing.
func projects() async -> Projects {
    let projects = await appEnvironment.current.services.projects.projectsOfCurrentMember()
    let fromTaskGroup = await withTaskGroup(of: String.self) { group in
        for _ in 0..<2 {
            group.addTask { appEnvironment.current.currentUser?.name ?? "nobody" }
        }
        return await group.reduce(into: []) { $0.append($1) }
    }
    let fromTask = await Task { appEnvironment.current.currentUser?.name ?? "nobody" }.value
    let captured = appEnvironment.current.currentUser?.name ?? "nobody"
    let (fromDetachedTask, capturedForDetachedTask) = await Task.detached {
        (appEnvironment.current.currentUser?.name ?? "nobody", captured)
    }.value
    return Projects(
        projects: projects,
        fromTaskGroup: fromTaskGroup,
        fromTask: fromTask,
        fromDetachedTask: fromDetachedTask,
        capturedForDetachedTask: capturedForDetachedTask
    )
}
