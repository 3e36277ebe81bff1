public import Foundation

/// A feature's view of the app's environment: the part of the app's services that a feature module
/// declares it needs, read and changed through the app's own stack.
///
/// A feature package states what it needs as a struct of its own, and takes a slice of it:
///
/// ```swift
/// // In the ProfileFeature package, which knows nothing of the app.
/// public struct ProfileServices: Sendable {
///     public var profileAPI: ProfileAPI
///     public var analytics: Analytics
/// }
///
/// public final class ProfileModel {
///     let environment: EnvironmentSlice<ProfileServices>
///     public init(environment: EnvironmentSlice<ProfileServices>) { self.environment = environment }
/// }
/// ```
///
/// The app keeps each feature's services in its own (`var profile: ProfileServices`) and hands the
/// feature its slice, in one place: `ProfileModel(environment: appEnvironment.slice(\.profile))`.
/// The compiler checks the composition: the app's services must hold a `ProfileServices`, and
/// making one names every service the feature needs.
///
/// A slice is a view, not a copy: a read gives the feature's services in the calling task's
/// environment (its scope's, inside one); a scope or a push made through the slice is the app's
/// stack's own, seen by the app's readers, and the app's scopes, pushes and session changes are
/// seen through the slice in the same step.
///
/// A feature's tests give it an environment of its own, in one line:
/// `ProfileModel(environment: .test(ProfileServices(profileAPI: .mock, analytics: .recording)))`.
public struct EnvironmentSlice<Services: Sendable>: Sendable {
    /// Borrows the feature's services in the calling task's environment.
    @usableFromInline let borrow: @Sendable () -> FieldBorrow
    @usableFromInline let source: any SliceSource<Services>

    @inlinable
    init(borrow: @escaping @Sendable () -> FieldBorrow, source: any SliceSource<Services>) {
        self.borrow = borrow
        self.source = source
    }

    /// The feature's services in the calling task's environment.
    ///
    /// Reading a field, as in `environment.services.fetchBio`, copies only that field when the
    /// app keeps the feature's services in a stored property: they are read in place, as
    /// ``EnvironmentStack/current`` reads the environment. A computed property is read through
    /// its key path, into a copy.
    ///
    /// - Complexity: O(1).
    @inlinable
    public var services: Services {
        // NB: always inlined: a `_read` the optimiser leaves out of line allocates its frame
        // (356 instructions a read against 115; Benchmarks/README, "Feature slices").
        @inline(__always) _read {
            let field = borrow()
            defer { field.end() }
            yield field.address.assumingMemoryBound(to: Services.self).pointee
        }
    }

    /// The clock of the calling task's environment (its scope's, inside one): what a feature
    /// reads for "now" without declaring a clock among its services.
    public var now: @Sendable () -> Date { source.basics().now }
    /// The locale of the calling task's environment.
    public var locale: Locale { source.basics().locale }
    /// The calendar of the calling task's environment.
    public var calendar: Calendar { source.basics().calendar }
    /// The time zone of the calling task's environment.
    public var timeZone: TimeZone { source.basics().timeZone }

    /// Runs `operation` with the feature's services changed, for the calling task and its child
    /// tasks only: a scope of the app's stack, so the app's readers in the scope see it too.
    /// - Parameters:
    ///   - change: Changes the feature's services the scope starts from.
    ///   - operation: The work to run in the scope.
    /// - Returns: What `operation` returns.
    /// - Throws: Whatever `operation` throws, after the scope has ended.
    public func withServices<R, E: Error>(
        _ change: (inout Services) -> Void,
        operation: () throws(E) -> R
    ) throws(E) -> R {
        try source.withServices(change, operation: operation)
    }

    /// Runs the asynchronous `operation` with the feature's services changed, for the calling
    /// task and the child tasks it starts only; see ``withServices(_:operation:)``.
    /// - Parameters:
    ///   - change: Changes the feature's services the scope starts from.
    ///   - isolation: The actor to run `operation` on; the caller's, by default.
    ///   - operation: The work to run in the scope.
    /// - Returns: What `operation` returns.
    /// - Throws: Whatever `operation` throws, after the scope has ended.
    public func withServices<R, E: Error>(
        _ change: (inout Services) -> Void,
        isolation: isolated (any Actor)? = #isolation,
        operation: () async throws(E) -> R
    ) async throws(E) -> R {
        try await source.withServices(change, isolation: isolation, operation: operation)
    }

    /// Pushes a copy of the current environment with the feature's services changed onto the app's
    /// stack (the calling task's scope's, inside one).
    /// - Parameter change: Changes the feature's services in the pushed environment.
    public func push(_ change: (inout Services) -> Void) {
        source.push(change)
    }

    /// Pops the app's stack (the calling task's scope's, inside one) and returns the popped
    /// environment's feature services, or `nil` at the base, which is never popped.
    @discardableResult
    public func pop() -> Services? { source.pop() }

    /// A slice over an environment of its own, whose services are `services`: for a feature's tests
    /// and previews, which need no app.
    ///
    /// Each call makes a new environment, so tests that make their own never meet.
    /// - Parameters:
    ///   - services: The feature's services: mocks, recorders, stubs.
    ///   - now: The environment's clock; a fixed instant by default, as `HabitatEnvironment.test` has.
    public static func test(
        _ services: Services,
        now: @escaping @Sendable () -> Date = { Date(timeIntervalSinceReferenceDate: 0) }
    ) -> EnvironmentSlice<Services> {
        var environment = HabitatEnvironment<SliceSchema<Services>>(services: services)
        environment.now = now
        return EnvironmentStack(environment).slice(\.self)
    }
}

/// The schema of a ``EnvironmentSlice/test(_:now:)`` slice's environment: its services and
/// nothing else.
enum SliceSchema<Services: Sendable>: EnvironmentSchema {}

/// What every environment has besides its services and session: its clock and its place.
@usableFromInline
struct EnvironmentBasics {
    let now: @Sendable () -> Date
    let locale: Locale
    let calendar: Calendar
    let timeZone: TimeZone
}

extension EnvironmentStack {
    /// The slice of this stack's environment that a feature module reads: the services at
    /// `services`, a stored or computed property of the app's services.
    ///
    /// ```swift
    /// let profile = ProfileModel(environment: appEnvironment.slice(\.profile))
    /// ```
    /// - Parameter services: Where the feature's services live in the app's.
    /// - Returns: A view of this stack: reads and scopes through it are this stack's.
    @inlinable
    public func slice<Services>(_ services: WritableKeyPath<App.Services, Services>) -> EnvironmentSlice<Services> {
        let source = StackSlice(stack: self, services: services)
        // NB: a key path read is a walk through the run time's key-path machinery, about 800
        // instructions against a field read's 50 (Benchmarks/README, "Feature slices"). A
        // stored property has a fixed offset in the environment, so the slice reads it in
        // place there instead; a computed one goes through the key path.
        if let offset = FieldBorrow.offset(of: services, in: App.self) {
            return EnvironmentSlice(borrow: { FieldBorrow(in: self, at: offset) }, source: source)
        }
        nonisolated(unsafe) let path = services
        return EnvironmentSlice(borrow: { FieldBorrow(copying: self.current.services[keyPath: path]) }, source: source)
    }
}

/// What a slice does besides reading, for the stack it views.
@usableFromInline
protocol SliceSource<Services>: Sendable {
    associatedtype Services: Sendable
    func basics() -> EnvironmentBasics
    func withServices<R, E: Error>(_ change: (inout Services) -> Void, operation: () throws(E) -> R) throws(E) -> R
    func withServices<R, E: Error>(
        _ change: (inout Services) -> Void,
        isolation: isolated (any Actor)?,
        operation: () async throws(E) -> R
    ) async throws(E) -> R
    func push(_ change: (inout Services) -> Void)
    func pop() -> Services?
}

/// A slice's view of one stack.
@usableFromInline
struct StackSlice<App: EnvironmentSchema, Services: Sendable>: SliceSource {
    let stack: EnvironmentStack<App>
    // NB: a key path is immutable; Swift 6.3 can't say `WritableKeyPath: Sendable` for a
    // generic root.
    nonisolated(unsafe) let services: WritableKeyPath<App.Services, Services>

    @usableFromInline
    init(stack: EnvironmentStack<App>, services: WritableKeyPath<App.Services, Services>) {
        self.stack = stack
        self.services = services
    }

    @usableFromInline func basics() -> EnvironmentBasics {
        let environment = stack.current
        return EnvironmentBasics(now: environment.now, locale: environment.locale, calendar: environment.calendar, timeZone: environment.timeZone)
    }

    @usableFromInline func withServices<R, E: Error>(_ change: (inout Services) -> Void, operation: () throws(E) -> R) throws(E) -> R {
        try stack.withEnvironment({ change(&$0.services[keyPath: services]) }, operation: operation)
    }

    @usableFromInline func withServices<R, E: Error>(
        _ change: (inout Services) -> Void,
        isolation: isolated (any Actor)?,
        operation: () async throws(E) -> R
    ) async throws(E) -> R {
        var environment = stack.current
        change(&environment.services[keyPath: services])
        return try await stack.withEnvironment(environment, isolation: isolation, operation: operation)
    }

    @usableFromInline func push(_ change: (inout Services) -> Void) {
        stack.push { change(&$0.services[keyPath: services]) }
    }

    @usableFromInline func pop() -> Services? {
        stack.pop()?.services[keyPath: services]
    }
}
