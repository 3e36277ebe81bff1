import Foundation
import Habitat
public import Hummingbird
import Logging
import Synchronization


/// The request context every route of this app uses: Hummingbird's own storage, and the
/// per-request values the load test's floor variant passes by hand (``RequestValues``).
public struct AppRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// Set only by the floor variant of the load test; the app itself reads the environment.
    public var values: RequestValues?

    public init(source: Source) {
        coreContext = .init(source: source)
    }
}

/// The server pattern: one middleware turns the request's bearer token into the request's
/// environment, its member signed in, its own request ID, logger and clock, and runs the rest
/// of the chain in a scope of that environment. Handlers, and the services they call, read
/// `appEnvironment.current`; no other request can see this scope, nor can code outside any
/// request (it sees the base).
///
/// NB: the scope's change closure signs the member in place (`setSession`), on the scope's own copy
/// of the base: one copy of the environment per request. Building the environment first
/// (`current.settingSession(...)`) and passing it costs two more copies; a `login()` inside the scope,
/// a second frame.
public struct RequestEnvironmentMiddleware: RouterMiddleware {
    public typealias Context = AppRequestContext

    public init() {}

    public func handle(
        _ request: Request,
        context: Context,
        next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        let base = appEnvironment.current
        guard let token = request.bearerToken else {
            throw HTTPError(.unauthorized, message: "missing bearer token: send Authorization: Bearer <token>")
        }
        guard let member = base.services.members.member(forToken: token) else {
            throw HTTPError(.unauthorized, message: "unknown or expired token")
        }
        let started = Date()
        let requestID = request.newRequestID()
        return try await appEnvironment.withEnvironment({ environment in
            environment.setSession(user: member, token: AuthToken(token))
            environment.services.requestID = requestID
            environment.services.logger[metadataKey: "request_id"] = "\(requestID)"
            environment.now = { started }
        }) {
            try await next(request, context)
        }
    }
}

private let requestCounter = Atomic<Int>(0)

extension Request {
    /// Makes a new request ID, a number of this process's own: each call is another request's.
    public func newRequestID() -> String {
        String(requestCounter.wrappingAdd(1, ordering: .relaxed).newValue)
    }

    /// The token of an `Authorization: Bearer <token>` header.
    public var bearerToken: String? {
        guard let header = headers[.authorization], header.hasPrefix("Bearer ") else { return nil }
        let token = header.dropFirst("Bearer ".count)
        return token.isEmpty ? nil : String(token)
    }
}
