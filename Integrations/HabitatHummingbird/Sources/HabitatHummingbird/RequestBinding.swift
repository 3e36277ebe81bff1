public import Habitat
public import Logging
public import ServiceContextModule

/// Everything a request's code reads from its task: the request's Habitat environment, its
/// logger (`Logger.current`) and its trace context (`ServiceContext.current`), bound together.
///
/// ``HabitatRequestMiddleware`` binds one for each request. Work that leaves the request's task
/// (`Task.detached`, a queue) sees none of the three; capture the binding and run the work in
/// it, and it sees all three:
///
/// ```swift
/// let binding = RequestBinding.current(of: appEnvironment)
/// Task.detached {
///     await binding.run(on: appEnvironment) { await sendReceipt() }
/// }
/// ```
public struct RequestBinding<App: EnvironmentSchema>: Sendable {
    /// The request's environment: its member signed in, its clock, its services.
    public var environment: HabitatEnvironment<App>
    /// The request's logger, with the request's metadata.
    public var logger: Logger
    /// The request's trace context.
    public var serviceContext: ServiceContext

    /// A binding of the three values given.
    public init(environment: HabitatEnvironment<App>, logger: Logger, serviceContext: ServiceContext) {
        self.environment = environment
        self.logger = logger
        self.serviceContext = serviceContext
    }

    /// The calling task's three values: the current environment of `stack`, `Logger.current`
    /// and `ServiceContext.current` (the top-level context when none is bound).
    /// - Parameter stack: The app's stack.
    public static func current(of stack: EnvironmentStack<App>) -> RequestBinding<App> {
        RequestBinding(environment: stack.current, logger: Logger.current, serviceContext: ServiceContext.current ?? .topLevel)
    }

    /// Runs `operation` with the three bound: a scope of `stack` whose base is ``environment``,
    /// `Logger.current` set to ``logger`` and `ServiceContext.current` to ``serviceContext``,
    /// for the calling task and its child tasks.
    /// - Parameters:
    ///   - stack: The app's stack.
    ///   - isolation: The actor to run `operation` on; the caller's, by default.
    ///   - operation: The work to run with the request's values.
    /// - Returns: What `operation` returns.
    public func run<R>(
        on stack: EnvironmentStack<App>,
        isolation: isolated (any Actor)? = #isolation,
        _ operation: () async throws -> R
    ) async rethrows -> R {
        try await ServiceContext.withValue(serviceContext) {
            try await withLogger(logger) { _ in
                try await stack.withEnvironment(environment) { try await operation() }
            }
        }
    }
}
