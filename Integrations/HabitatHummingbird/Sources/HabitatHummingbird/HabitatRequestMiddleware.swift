public import Habitat
public import Hummingbird
import Logging
public import ServiceContextModule
import Synchronization

/// Gives each request its own Habitat environment, logger and trace context, bound in one
/// step, so they can't drift apart.
///
/// The middleware starts from the app's current environment, the logger Hummingbird bound for
/// the request (`Logger.current`) and the request's trace context, hands them to `prepare`
/// (sign the request's member in, set its clock, add metadata), and runs the rest of the chain
/// with all three bound (``RequestBinding/run(on:isolation:_:)``). Handlers read
/// `appEnvironment.current`, `Logger.current` and `ServiceContext.current`, and see the same
/// request in each.
///
/// ```swift
/// router.add(middleware: HabitatRequestMiddleware(stack: appEnvironment) { request, _, binding in
///     guard let member = members.member(forToken: request.bearerToken) else { throw HTTPError(.unauthorized) }
///     binding.environment.session = UserSession(user: member, token: AuthToken(request.bearerToken!))
///     binding.logger[metadataKey: "member"] = "\(member.id)"
/// })
/// ```
///
/// Every request gets a request ID (``RequestID``), in its logger's metadata (`request.id`) and
/// in its trace context, before `prepare` runs.
public struct HabitatRequestMiddleware<Context: RequestContext, App: EnvironmentSchema>: RouterMiddleware {
    let stack: EnvironmentStack<App>
    let prepare: @Sendable (Request, Context, inout RequestBinding<App>) async throws -> Void

    /// - Parameters:
    ///   - stack: The app's stack.
    ///   - prepare: Makes the request's binding from the app's: sign the member in, set the
    ///     clock, add logger metadata. Throw an `HTTPError` to refuse the request.
    public init(
        stack: EnvironmentStack<App>,
        prepare: @escaping @Sendable (Request, Context, inout RequestBinding<App>) async throws -> Void
    ) {
        self.stack = stack
        self.prepare = prepare
    }

    public func handle(
        _ request: Request,
        context: Context,
        next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        let id = RequestID.next()
        var binding = RequestBinding.current(of: stack)
        binding.logger[metadataKey: "request.id"] = "\(id)"
        binding.serviceContext[RequestID.Key.self] = id
        try await prepare(request, context, &binding)
        return try await binding.run(on: stack) { try await next(request, context) }
    }
}

/// A request's ID, unique in the process, as ``HabitatRequestMiddleware`` gives it.
public struct RequestID: Hashable, Sendable, CustomStringConvertible {
    /// The ID's number, counted from 1 in each process.
    public let value: UInt64

    public var description: String { String(value) }

    /// The ID bound to the calling task's trace context, if any.
    public static var current: RequestID? { ServiceContext.current?[Key.self] }

    /// The trace-context key the middleware stores the ID under.
    public enum Key: ServiceContextKey {
        public typealias Value = RequestID
        public static var nameOverride: String? { "habitat.request.id" }
    }

    static func next() -> RequestID { RequestID(value: counter.wrappingAdd(1, ordering: .relaxed).newValue) }
}

private let counter = Atomic<UInt64>(0)
