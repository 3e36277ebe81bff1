/// A stack of environments: the app's environment now, with earlier environments underneath.
///
/// An app keeps one stack in a global `let` (conventionally named `appEnvironment`) and reads
/// ``current`` wherever it needs a service, the user or the configuration. Tests and previews
/// ``push(_:label:fileID:line:)`` a changed environment and ``pop(fileID:line:)`` it afterwards,
/// or, better, change it for one task with
/// ``withEnvironment(_:fileID:line:operation:)-((HabitatEnvironment<App>)->Void,_,_,_)`` so
/// parallel tests never meet.
///
/// ```swift
/// let appEnvironment = EnvironmentStack<AppSchema>(live: HabitatEnvironment(services: .live))
///
/// appEnvironment.login(user: account, token: AuthToken("s3cr3t"))
/// let name = appEnvironment.current.currentUser?.name
///
/// appEnvironment.push { $0.locale = Locale(identifier: "de_DE") }
/// defer { appEnvironment.pop() }
/// ```
///
/// Every operation is safe from any thread or task, and each one is atomic: no reader ever sees
/// a half-applied transition. Reading ``current`` takes no lock and allocates nothing.
///
/// ### Scopes
/// Inside ``withEnvironment(_:fileID:line:operation:)-((HabitatEnvironment<App>)->Void,_,_,_)`` the
/// stack acts on a stack of the scope's own, for the calling task and its child tasks only:
/// ``current`` is the scope's top, and ``push(_:label:fileID:line:)``, ``pop(fileID:line:)``,
/// ``login(user:token:fileID:line:)``, ``logout(fileID:line:)`` and the updates change the scope's
/// stack, never the global one or another task's. When the scope ends, they are gone.
// Safe: every stored property is immutable and thread-safe: the states keep their mutable parts
// behind their locks, and `scopePool` is only used through `withLock` (a `Locked` can't say
// `Sendable`, being a `ManagedBuffer`).
public final class EnvironmentStack<App: EnvironmentSchema>: @unchecked Sendable {
    /// Process-unique, so a task's scopes can name their stack without retaining it.
    @usableFromInline let id: UInt64
    /// The global (unscoped) stack.
    @usableFromInline let root: StackState<App>
    /// How many scope states of this stack are alive. While it is zero, no task can be in a
    /// scope of this stack, and a read goes straight to `root` without a task-local lookup.
    @usableFromInline let liveScopes = AtomicWord(0)
    /// Scope states whose scopes ended, ready for the next `withEnvironment`.
    @usableFromInline let scopePool = Locked.make([StackState<App>]())
    /// The live environment, for a stack made with ``init(live:preview:test:fileID:line:)``.
    @usableFromInline let live: LiveBase<App>?
    /// What the persistence product keeps on the stack: autosave, refreshes in flight.
    @usableFromInline package let attachments = StackAttachments<App>()

    /// Creates a stack whose base is `base`.
    ///
    /// The base can be replaced (``replaceCurrent(label:fileID:line:_:)``) but never
    /// popped.
    /// - Parameters:
    ///   - base: The environment at the bottom of the stack.
    ///   - fileID: The calling file, recorded as the base's ``FrameOrigin``.
    ///   - line: The calling line, recorded with it.
    public init(_ base: HabitatEnvironment<App>, fileID: StaticString = #fileID, line: UInt = #line) {
        id = stackIDSource.wrappingAdd(1, ordering: .acquiringAndReleasing).newValue
        root = StackState(stackID: id, top: .make(base, origin: FrameOrigin(.base, fileID: fileID, line: line)), liveScopes: nil)
        live = nil
    }

    /// Creates the app's stack from a description of its live environment, built only where it is
    /// used: in the app, never in a test run or a preview that brings its own.
    ///
    /// ```swift
    /// let appEnvironment = EnvironmentStack<AppSchema>(live: HabitatEnvironment(services: .live))
    /// ```
    ///
    /// Which base the stack gets depends on ``EnvironmentContext/current``:
    /// - **live** (the app): `live()`, built once, by the first call that uses the stack (a
    ///   read, a push, a login); until then the stack takes a slower path to see it isn't built.
    /// - **preview**: `preview()` if given, otherwise `live()`.
    /// - **test**: none. Each test installs its own environment (the `.environment` trait, or
    ///   `EnvironmentTestCase`). A read that finds no test environment is reported as a test failure
    ///   naming the test and saying how to fix it, once per test; so is a read from work that
    ///   escaped a test's scope (`Task.detached`, a `DispatchQueue` closure). The read then gets
    ///   the stack's test environment, `test()`, and never the live one; only a stack that
    ///   names no test environment builds its live environment then, so the test can go on, and the report
    ///   says so. A test that means to use live values starts its scope from ``liveEnvironment``.
    ///
    /// The check costs nothing outside test runs: the app's reads take the same path as a
    /// stack made with ``init(_:fileID:line:)``, which is never checked.
    ///
    /// - Parameters:
    ///   - live: Builds the live environment: real services, the real clock.
    ///   - preview: The environment Xcode previews show, if it differs; like `live`, a value built only
    ///     where it is used (in a preview).
    ///   - test: Builds the environment a test run's reads get when a test installed none (services
    ///     whose endpoints fail, say), built only there, once; `nil` (the default) names none.
    ///   - fileID: The calling file, recorded as the base's ``FrameOrigin``.
    ///   - line: The calling line, recorded with it.
    public init(
        live: @autoclosure @escaping @Sendable () -> HabitatEnvironment<App>,
        preview: @autoclosure @escaping @Sendable () -> HabitatEnvironment<App>? = nil,
        test: (@Sendable () -> HabitatEnvironment<App>)? = nil,
        fileID: StaticString = #fileID,
        line: UInt = #line
    ) {
        let context = EnvironmentContext.current
        if context == .test { LoadedCopies.check() }
        id = stackIDSource.wrappingAdd(1, ordering: .acquiringAndReleasing).newValue
        let base = LiveBase(build: live, test: test, fenced: context == .test, fileID: fileID, line: line)
        self.live = base
        if context == .preview {
            root = StackState(stackID: id, top: .make(preview() ?? base.environment, origin: FrameOrigin(.base, fileID: fileID, line: line)), liveScopes: nil)
        } else {
            root = StackState(stackID: id, top: .makeEmpty(origin: FrameOrigin(.base, fileID: fileID, line: line)), liveScopes: nil)
            // One scope that never ends, until the base is built (for good, in a test run): every
            // call looks for its task's scope, and the first that finds none builds the base.
            liveScopes.wrappingAdd(1, ordering: .acquiringAndReleasing)
        }
    }

    /// The live environment, built on first use, for a test that means to use live values:
    /// `.environment(appEnvironment, appEnvironment.liveEnvironment)`.
    ///
    /// For a stack made from a value (``init(_:fileID:line:)``), the base it was made with.
    public var liveEnvironment: HabitatEnvironment<App> {
        live?.environment ?? root.withGuarded { ($0.below.first ?? $0.top).environment }
    }

    /// How many times this stack built its live environment (0 or 1): for tests that show a test
    /// run never builds it.
    package var liveBaseBuilds: Int { live?.builds ?? 0 }

    /// How many environments are on the stack (in the calling task's scope, inside one),
    /// counting the base. A new stack, or a new scope, has depth 1.
    @inlinable
    public var depth: Int { withActiveState { $0.depth } }

    /// A stream of every change made to the stack from now on, in order.
    ///
    /// Each access returns a new stream that receives the changes made after the access. Inside
    /// a scope the stream follows the scope's stack and finishes when the scope ends.
    ///
    /// ```swift
    /// let changes = appEnvironment.changes
    /// Task { for await change in changes { log(change.kind, change.new.currentUser) } }
    /// ```
    ///
    /// The stream buffers every change its reader hasn't taken yet, each with two environments.
    /// A subscriber that may fall behind, or stop reading while it lives, bounds its buffer with
    /// ``changes(bufferingPolicy:)``.
    @inlinable
    public var changes: AsyncStream<EnvironmentChange<App>> { withActiveState { $0.subscribe().stream } }

    /// A stream of the changes made to the stack from now on, in order, that buffers at most
    /// what `bufferingPolicy` says while its reader is busy.
    ///
    /// ```swift
    /// // A status bar needs only the latest change.
    /// let latest = appEnvironment.changes(bufferingPolicy: .bufferingNewest(1))
    /// ```
    /// - Parameter bufferingPolicy: How many unread changes to keep, and which: `.unbounded`
    ///   (what ``changes`` does), `.bufferingNewest(n)` or `.bufferingOldest(n)`.
    /// - Returns: A new stream; inside a scope it follows the scope's stack and finishes when
    ///   the scope ends.
    @inlinable
    public func changes(
        bufferingPolicy: AsyncStream<EnvironmentChange<App>>.Continuation.BufferingPolicy
    ) -> AsyncStream<EnvironmentChange<App>> {
        withActiveState { $0.subscribe(bufferingPolicy: bufferingPolicy).stream }
    }

    /// Records the changes made from now on until `stop` is called; then the stream ends after
    /// the last recorded change. For `HabitatTesting`'s assertions.
    package func recordChanges() -> (stream: AsyncStream<EnvironmentChange<App>>, stop: @Sendable () -> Void) {
        withActiveState { $0.subscribe() }
    }

    /// How many change streams of the calling task's stack are subscribed: for tests that show
    /// a subscriber went away.
    package var changeSubscriberCount: Int { withActiveState { $0.subscriberCount } }
}

@usableFromInline
let stackIDSource = AtomicWord(0)
