import Foundation
import Habitat
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

/// The app: `POST /signin` is public; `/me` and `/projects` run in the request's environment.
public func buildRouter() throws -> Router<AppRequestContext> {
    let router = Router(context: AppRequestContext.self)
    router.post("signin") { request, context -> SignedIn in
        let body = try await request.decode(as: SignIn.self, context: context)
        guard let token = appEnvironment.current.services.members.signIn(name: body.name, password: body.password) else {
            throw HTTPError(.unauthorized, message: "wrong name or password")
        }
        return SignedIn(token: token.secret, expiresAt: token.expiresAt)
    }
    let signedIn = router.group().add(middleware: RequestEnvironmentMiddleware())
    signedIn.get("me") { _, _ in try profile() }
    signedIn.patch("me") { request, context -> Profile in
        let body = try await request.decode(as: Rename.self, context: context)
        guard !body.name.isEmpty else { throw HTTPError(.badRequest, message: "name must not be empty") }
        let environment = appEnvironment.current
        guard let member = environment.currentUser, let renamed = environment.services.members.rename(member.id, to: body.name) else {
            throw HTTPError(.unauthorized)
        }
        try appEnvironment.updateCurrentUser(renamed)   // stays in this request's scope
        return try profile()
    }
    signedIn.get("projects") { _, _ in await projects() }
    try addOpenAPIRoutes(to: router)
    return router
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
