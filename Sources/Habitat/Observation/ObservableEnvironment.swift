public import Observation

/// The parts of a stack's current environment that screens show, as an `@Observable` object:
/// the session (who is signed in, and how sure the app is of it) and the configuration.
///
/// A SwiftUI view that reads ``session``, ``otherAccounts`` or ``config`` redraws
/// when a login, a logout, a user update, a refresh, a restore or a configuration change
/// happens on the stack, with no glue code:
///
/// <!-- not compiled: SwiftUI exists only on Apple platforms -->
/// ```swift
/// @main struct MyApp: App {
///     @State private var environment = ObservableEnvironment(appEnvironment)
///     var body: some Scene {
///         WindowGroup { RootView().environment(environment) }
///     }
/// }
///
/// struct RootView: View {
///     @Environment(ObservableEnvironment<AppSchema>.self) private var environment
///     var body: some View {
///         if let user = environment.session?.user { HomeView(user: user) } else { LoginView() }
///     }
/// }
/// ```
///
/// It follows the stack through ``EnvironmentStack/changes``, on the main actor, in order. Made
/// inside a
/// ``EnvironmentStack/withEnvironment(_:fileID:line:operation:)-((HabitatEnvironment<App>)->Void,_,_,_)``
/// scope, it follows the scope's stack until the scope ends. Services are not mirrored: read them
/// from the stack.
@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
@MainActor @Observable
public final class ObservableEnvironment<App: EnvironmentSchema> {
    /// The signed-in session, or `nil` when logged out. Its token never prints.
    public private(set) var session: UserSession<App.User>?
    /// The app's configuration.
    public private(set) var config: App.Config
    /// The signed-in accounts besides the active one (see ``HabitatEnvironment/otherAccounts``),
    /// for an account picker: changed in the same step as ``session``.
    public private(set) var otherAccounts: [UserSession<App.User>]

    private let subscription = Subscription()

    /// Starts following `stack`'s current environment.
    /// - Parameter stack: The app's stack, usually its global `appEnvironment`.
    public init(_ stack: EnvironmentStack<App>) {
        // NB: subscribe before reading, so no change falls between the two; a change already
        // seen is applied again, to the same values.
        let changes = stack.changes
        let current = stack.current
        session = current.session
        config = current.config
        otherAccounts = current.otherAccounts
        // NB: detached, so the follower holds no copy of a test scope's binding: `changes`
        // already names the scope's stack, and the scope's end finishes it; an inherited binding
        // would outlive the test until the main actor ran the cancelled loop once more.
        subscription.start(Self.follow(changes, into: self))
    }

    private static func follow(_ changes: AsyncStream<EnvironmentChange<App>>, into object: ObservableEnvironment) -> Task<Void, Never> {
        let target = WeakTarget(object)
        return Task.detached { await apply(changes, to: target) }
    }

    private static func apply(_ changes: AsyncStream<EnvironmentChange<App>>, to target: WeakTarget) async {
        for await change in changes {
            guard let object = target.object else { return }
            object.session = change.new.session
            object.config = change.new.config
            object.otherAccounts = change.new.otherAccounts
        }
    }

    /// The object a follower updates, held weakly so the follower never keeps it alive.
    private final class WeakTarget: Sendable {
        @MainActor weak var object: ObservableEnvironment?
        @MainActor init(_ object: ObservableEnvironment) { self.object = object }
    }

    deinit {
        subscription.cancel()
    }

    /// The task that follows the stack; cancelled when the object goes.
    private final class Subscription: Sendable {
        private let task = LockedBox<Task<Void, Never>?>(nil)

        func start(_ task: Task<Void, Never>) {
            self.task.withLock { $0 = task }
        }

        func cancel() {
            task.withLock { $0 }?.cancel()
        }
    }
}
