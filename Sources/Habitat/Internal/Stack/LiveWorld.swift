/// A stack's live world, built at most once, and, in a test run, the fence that reports reads
/// that reach it.
///
/// NB: the fence costs the app nothing: outside tests a stack builds its live base when the
/// stack is made (a global `let` is made on first use) and reads never come here. In a test
/// run the stack's base starts empty, the stack counts one scope that never ends, so every read
/// looks for the task's scope, and a read that finds none comes here: it is reported, and the
/// live base is built then, once, so the test can go on.
@usableFromInline
final class LiveWorld<App: EnvironmentSchema>: Sendable {
    let build: @Sendable () -> HabitatEnvironment<App>
    let fileID: StaticString
    let line: UInt
    /// Whether reads of the base are fenced: a test run, for a stack made with `live:`.
    @usableFromInline let fenced: Bool
    /// The live world once built, and whether the one warning was printed.
    private let state = LockedBox<(built: HabitatEnvironment<App>?, warned: Bool)>((nil, false))

    init(build: @escaping @Sendable () -> HabitatEnvironment<App>, fenced: Bool, fileID: StaticString, line: UInt) {
        self.build = build
        self.fenced = fenced
        self.fileID = fileID
        self.line = line
    }

    /// The live world, built on the first call.
    var environment: HabitatEnvironment<App> {
        state.withLock { state in
            if let built = state.built { return built }
            let environment = build()
            state.built = environment
            return environment
        }
    }

    /// How many times the live world was built: 0 or 1.
    var builds: Int { state.withLock { $0.built == nil ? 0 : 1 } }

    /// Reports a read that reached the base in a test run: to HabitatTesting, which fails the
    /// test, or, in a process that doesn't link it, as one warning.
    func reportReach(openScopes: Int) {
        let stack = "the stack made at \(fileID):\(line)"
        if let testReporter { return testReporter.liveWorldReached(stack: stack, openScopes: openScopes) }
        guard state.withLock({ state in defer { state.warned = true }; return !state.warned }) else { return }
        print("[Habitat] warning: a read reached the live world of \(stack) in a test run, where no test world is installed")
    }
}

extension EnvironmentStack {
    /// The root, for a read or write that found no scope of this stack: in a test run, for a
    /// stack with a fenced live world, the read is reported and the live base built.
    @usableFromInline
    func rootReached() -> Unmanaged<StackState<App>> {
        if let live, live.fenced { live.reportReach(openScopes: Int(liveScopes.load(ordering: .acquiring)) - 1) }
        return Unmanaged.passUnretained(filledRoot)
    }

    /// The root with its base filled, without reporting: for the stack's own machinery
    /// (autosave) that reads the root on its own threads. Outside a test run, the call that
    /// fills it ends the scope that made every call look for one.
    var filledRoot: StackState<App> {
        if let live, root.fillBaseIfEmpty({ live.environment }), !live.fenced {
            liveScopes.wrappingSubtract(1, ordering: .acquiringAndReleasing)
        }
        return root
    }
}
