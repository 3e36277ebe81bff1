/// A stack's live environment, built at most once, and, in a test run, the fence that reports reads
/// that reach it.
///
/// NB: the base starts empty and the stack counts one scope that never ends, so every call looks
/// for its task's scope, and one that finds none comes here and builds the base, once. In the
/// app that call also ends the phantom scope: from then on reads take the fast path again, and
/// the fence costs nothing. In a test run the scope stays, so every read that finds no test
/// environment comes here and is reported; the base is built so the test can go on.
@usableFromInline
final class LiveBase<App: EnvironmentSchema>: Sendable {
    typealias Build = @Sendable () -> HabitatEnvironment<App>
    let build: Build
    /// The stack's test environment, if it names one: what a fenced read gets instead of `build()`.
    let test: Build?
    /// "the stack made at FILE:LINE", for the reports.
    let stack: String
    /// Whether reads of the base are fenced: a test run, for a stack made with `live:`.
    @usableFromInline let fenced: Bool
    /// 1 once the stack's base holds the live environment: later calls that reach the root (unscoped
    /// reads while scopes are open) don't take the root's lock to see it filled.
    let baseFilled = AtomicWord(0)
    /// The live environment once built, and whether the one warning was printed.
    private let state = LockedBox<(built: HabitatEnvironment<App>?, warned: Bool)>((nil, false))

    init(build: @escaping Build, test: Build?, fenced: Bool, fileID: StaticString, line: UInt) {
        self.build = build
        self.test = test
        self.fenced = fenced
        stack = "the stack made at \(fileID):\(line)"
    }

    /// The live environment, built on the first call.
    var environment: HabitatEnvironment<App> {
        state.withLock { state in
            if let built = state.built { return built }
            let environment = build()
            state.built = environment
            return environment
        }
    }

    /// How many times the live environment was built: 0 or 1.
    var builds: Int { state.withLock { $0.built == nil ? 0 : 1 } }

    /// The stack's base: in a test run, the stack's test environment when it names one.
    var base: HabitatEnvironment<App> { fenced ? test?() ?? environment : environment }

    /// Reports a read that reached the base in a test run: to HabitatTesting, which fails the
    /// test, or, in a process that doesn't link it, as one warning.
    func reportReach(openScopes: Int) {
        if let testReporter { return testReporter.liveBaseReached(stack: stack, openScopes: openScopes, testEnvironmentInstalled: test != nil) }
        guard state.withLock({ state in defer { state.warned = true }; return !state.warned }) else { return }
        print("[Habitat] warning: a read in a test run reached \(stack), with no test environment installed: it got its \(test == nil ? "live" : "test") environment")
    }
}

extension EnvironmentStack {
    /// The root, for a read or write that found no scope of this stack: in a test run, for a
    /// stack with a fenced live environment, the base is built (the stack's test environment, or the live
    /// one when it names none) and the read reported, saying which.
    @usableFromInline
    func rootReached() -> Unmanaged<StackState<App>> {
        let root = filledRoot
        if let live, live.fenced { live.reportReach(openScopes: Int(liveScopes.load(ordering: .acquiring)) - 1) }
        return Unmanaged.passUnretained(root)
    }

    /// The root with its base filled, without reporting: for the stack's own machinery
    /// (autosave) that reads the root on its own threads. Outside a test run, the call that
    /// fills it ends the scope that made every call look for one.
    package var filledRoot: StackState<App> {
        if let live, live.baseFilled.load(ordering: .acquiring) == 0 {
            if root.fillBaseIfEmpty({ live.base }), !live.fenced {
                liveScopes.wrappingSubtract(1, ordering: .acquiringAndReleasing)
            }
            live.baseFilled.store(1, ordering: .releasing)
        }
        return root
    }
}
