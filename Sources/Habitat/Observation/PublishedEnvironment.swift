#if canImport(Combine)
public import Combine
#endif

/// The parts of a stack's current environment that screens show, as an `ObservableObject`: for
/// SwiftUI apps that support iOS 16 or macOS 13, where `@Observable` doesn't exist.
///
/// Where Combine doesn't exist (Linux) it is the same class without the `ObservableObject`
/// conformance, so a view model that holds one builds and is tested there too.
///
/// It holds what ``ObservableEnvironment`` holds (the session, the other accounts, the
/// configuration) and follows the stack the same way, on the main actor, in order. SwiftUI's
/// `@StateObject` keeps it; a view reads it through `@ObservedObject` or `@EnvironmentObject`:
///
/// <!-- not compiled: SwiftUI exists only on Apple platforms -->
/// ```swift
/// @main struct MyApp: App {
///     @StateObject private var environment = PublishedEnvironment(appEnvironment)
///     var body: some Scene {
///         WindowGroup { RootView().environmentObject(environment) }
///     }
/// }
///
/// struct RootView: View {
///     @EnvironmentObject private var environment: PublishedEnvironment<AppSchema>
///     var body: some View {
///         if let user = environment.session?.user { HomeView(user: user) } else { LoginView() }
///     }
/// }
/// ```
///
/// Which to use: an app whose minimum is iOS 17 / macOS 14 uses ``ObservableEnvironment``
/// (views redraw only for what they read); an app that supports iOS 16 / macOS 13 uses this one
/// everywhere (views redraw on every change the stack publishes). Services are not mirrored:
/// read them from the stack.
@MainActor
public final class PublishedEnvironment<App: EnvironmentSchema> {
    /// The signed-in session, or `nil` when logged out. Its token never prints.
    public private(set) var session: UserSession<App.User>?
    /// The app's configuration.
    public private(set) var config: App.Config
    /// The signed-in accounts besides the active one (see ``HabitatEnvironment/otherAccounts``),
    /// for an account picker: changed in the same step as ``session``.
    public private(set) var otherAccounts: [UserSession<App.User>]

    private let follower: Task<Void, Never>

    /// Starts following `stack`'s current environment.
    /// - Parameter stack: The app's stack, usually its global `appEnvironment`, or a window's
    ///   (``WindowEnvironment/stack``).
    public init(_ stack: EnvironmentStack<App>) {
        // NB: subscribe before reading, so no change falls between the two.
        let changes = stack.changes
        let current = stack.current
        session = current.session
        config = current.config
        otherAccounts = current.otherAccounts
        // NB: detached, so the follower holds no copy of a test scope's binding (see
        // ObservableEnvironment). It runs on the main actor, so not before this returns.
        let target = WeakTarget()
        follower = Task.detached { await Self.apply(changes, to: target) }
        target.object = self
    }

    deinit {
        follower.cancel()
    }

    private static func apply(_ changes: AsyncStream<EnvironmentChange<App>>, to target: WeakTarget) async {
        for await change in changes {
            guard let object = target.object else { return }
            #if canImport(Combine)
            object.objectWillChange.send()
            #endif
            object.session = change.new.session
            object.config = change.new.config
            object.otherAccounts = change.new.otherAccounts
        }
    }

    /// The object a follower updates, held weakly so the follower never keeps it alive.
    private final class WeakTarget: Sendable {
        @MainActor weak var object: PublishedEnvironment?
    }
}

#if canImport(Combine)
extension PublishedEnvironment: ObservableObject {}
#endif
