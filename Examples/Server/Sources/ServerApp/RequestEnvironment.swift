import Foundation
import Habitat
import HabitatServerSessions
public import Hummingbird
import Logging
import Synchronization


/// The request context every route of this app uses: Hummingbird's own storage, nothing more.
/// (The load test's floor variant passes its values in a context of its own,
/// `FloorRequestContext`.)
public struct AppRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage

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
/// A token is a session ID from `POST /signin`, looked up in the fleet's session backend, or
/// one of the member directory's own tokens (the load test's `tok-N`). When the request changed
/// its member (`PATCH /me`), the middleware writes that change back, and only that, with a
/// versioned update: an update another instance made meanwhile is kept. A backend that can't
/// be reached answers 503, never a member it can't confirm.
///
/// NB: the scope's change closure signs the member in place (`session = UserSession(...)`), on the scope's own copy
/// of the base: one copy of the environment per request. Building the environment first
/// (`current.with(\.session, ...)`) and passing it costs two more copies; a `login()` inside the scope,
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
        let requestID = request.newRequestID()
        let (member, isFleetSession) = try await resolve(token, requestID: requestID, in: base)
        let started = Date()
        return try await appEnvironment.withEnvironment({ environment in
            environment.session = UserSession(user: member, token: AuthToken(token))
            environment.services.requestID = requestID
            environment.services.logger[metadataKey: "request_id"] = "\(requestID)"
            environment.now = { started }
        }) {
            let response = try await next(request, context)
            if let changed = appEnvironment.current.currentUser, changed != member {
                try await writeBack(changed, token: token, isFleetSession: isFleetSession, in: base)
            }
            return response
        }
    }
}

extension RequestEnvironmentMiddleware {
    /// The member `token` names, and whether it is a fleet session's ID (not one of the
    /// directory's own tokens).
    private func resolve(_ token: String, requestID: String, in base: HabitatEnvironment<ServerApp>) async throws -> (Member, isFleetSession: Bool) {
        if let member = base.services.members.member(forToken: token) { return (member, false) }
        guard let session = try await fleetSession(token, requestID: requestID, in: base) else {
            throw HTTPError(.unauthorized, message: "unknown or expired token")
        }
        return (session.value.member, true)
    }

    /// The fleet's session `token`, or `nil` when there is none; 503 when the backend can't say.
    private func fleetSession(_ token: String, requestID: String, in base: HabitatEnvironment<ServerApp>) async throws -> ServerSession<MemberSession>? {
        do {
            return try await base.services.sessions.get(token)
        } catch .unavailable(let reason) {
            // The reason may name the database: it goes to the log, not to the client.
            base.services.logger.error("sessions are unavailable", metadata: ["request_id": "\(requestID)", "error": "\(reason)"])
            throw HTTPError(.serviceUnavailable, message: "sessions are unavailable, try again (request \(requestID))")
        } catch {
            base.services.logger.error("session \(error)")
            return nil   // undecodable: a session this app can't read signs nobody in
        }
    }

    /// Saves a member the request changed: into its fleet session (a versioned update, so what
    /// other requests wrote meanwhile stays), or into the directory for its own tokens.
    private func writeBack(_ member: Member, token: String, isFleetSession: Bool, in base: HabitatEnvironment<ServerApp>) async throws {
        guard isFleetSession else {
            _ = base.services.members.rename(member.id, to: member.name)
            return
        }
        _ = try await fleet { try await base.services.sessions.update(token) { $0.member = member } }
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
