#if canImport(Observation)
import Foundation
import Habitat
import HabitatPersistence
import Observation
import Testing

/// `ObservableEnvironment` tells an observer what a screen would redraw for: each test tracks
/// one property with `withObservationTracking`, makes one change on the stack, and waits for the
/// observer to be told.
@MainActor
@Suite struct ObservationTests {
    /// Waits until `read`'s observation fires after `change`, or `limit` passes; returns whether
    /// it fired. The limit only keeps a broken build from hanging: nothing is timed.
    ///
    /// NB: 10 s was once not enough in CI: the suite shares the cooperative pool's two threads
    /// there, and process tests that waited in them synchronously held both for over 100 s.
    /// They wait on ``BlockingThreads`` now, but under the thread sanitizer the whole suite
    /// still shares two cores for two minutes.
    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)  // ObservableEnvironment, withObservationTracking
    private func observer<T>(
        of read: @escaping @MainActor () -> T,
        isToldOf change: () throws -> Void,
        limit: Duration = .seconds(120),
        sourceLocation: SourceLocation = #_sourceLocation
    ) async rethrows {
        let (told, tell) = AsyncStream<Void>.makeStream()
        withObservationTracking { _ = read() } onChange: { tell.yield() }
        try change()
        // NB: named, so that `.ci/run` retries alone a wait starved past its limit under the
        // sanitizer on a busy machine, as it does a time limit.
        let withinTheWaitLimit = await firstOf(told, orAfter: limit)
        #expect(withinTheWaitLimit, "the observer was not told of the change", sourceLocation: sourceLocation)
    }

    private func firstOf(_ stream: AsyncStream<Void>, orAfter limit: Duration) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask { for await _ in stream { return true }; return false }
            group.addTask { try? await Task.sleep(for: limit); return false }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
    }

    /// Lets the object's follower task apply every change made so far.
    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)  // ObservableEnvironment, withObservationTracking
    private func settle(_ stack: EnvironmentStack<TestApp>, _ object: ObservableEnvironment<TestApp>) async {
        while object.config != stack.current.config || object.session != stack.current.session {
            await Task.yield()
        }
    }

    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)  // ObservableEnvironment, withObservationTracking
    @Test func loginAndLogoutAreObserved() async throws {
        let stack = makeStack()
        let object = ObservableEnvironment(stack)
        await observer(of: { object.session?.user }, isToldOf: { stack.login(user: .ada, token: AuthToken("t")) })
        await settle(stack, object)
        #expect(object.session?.user == .ada)
        #expect(object.session != nil)
        await observer(of: { object.session != nil }, isToldOf: { stack.logout() })
        await settle(stack, object)
        #expect(object.session?.user == nil)
        #expect(object.session == nil)
    }

    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)  // ObservableEnvironment, withObservationTracking
    @Test func userAndConfigUpdatesAreObserved() async throws {
        let stack = makeStack()
        stack.login(user: .ada, token: AuthToken("t"))
        let object = ObservableEnvironment(stack)
        try await observer(of: { object.session?.user }, isToldOf: { try stack.updateCurrentUser { $0.name = "Ada L." } })
        await settle(stack, object)
        #expect(object.session?.user.name == "Ada L.")
        await observer(of: { object.config }, isToldOf: { stack.updateConfig { $0.timeout = 5 } })
        await settle(stack, object)
        #expect(object.config.timeout == 5)
    }

    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)  // ObservableEnvironment, withObservationTracking
    @Test func restoreAndRefreshAreObserved() async throws {
        let sessions = SessionStore<TestApp>.inMemory()
        let saving = makeStack()
        saving.login(user: .grace, token: AuthToken("old"))
        try saving.save(to: sessions)

        let stack = makeStack()
        let object = ObservableEnvironment(stack)
        try await observer(of: { object.session?.user }, isToldOf: { try stack.restore(from: sessions) })
        await settle(stack, object)
        #expect(object.session?.user == .grace)
        #expect(object.session?.state == .restored)

        let (told, tell) = AsyncStream<Void>.makeStream()
        withObservationTracking { _ = object.session } onChange: { tell.yield() }
        let outcome = await stack.refreshSession { _ in .refreshed(token: AuthToken("new")) }
        #expect(outcome == .refreshed)
        #expect(await firstOf(told, orAfter: .seconds(120)))
        await settle(stack, object)
        #expect(object.session?.state == .authenticated)
        #expect(object.session?.state != .restored)
    }

    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)  // ObservableEnvironment, withObservationTracking
    @Test func anObjectMadeInAScopeFollowsTheScopeUntilItEnds() async throws {
        let stack = makeStack()
        let outside = ObservableEnvironment(stack)
        let inside = try await stack.withEnvironment({ $0.config.timeout = 1 }) { () async throws -> ObservableEnvironment<TestApp> in
            let object = ObservableEnvironment(stack)
            #expect(object.config.timeout == 1)
            await observer(of: { object.session?.user }, isToldOf: { stack.login(user: .ada, token: AuthToken("t")) })
            await settle(stack, object)
            #expect(object.session?.user == .ada)
            return object
        }
        // The scope's login never reached the global stack or its observer.
        #expect(stack.current.session == nil)
        #expect(outside.session?.user == nil)
        // After the scope, the object no longer follows anything: a global login leaves it as it was.
        stack.login(user: .grace, token: AuthToken("g"))
        await settle(stack, outside)
        #expect(outside.session?.user == .grace)
        #expect(inside.session?.user == .ada)
        #expect(inside.config.timeout == 1)
    }

    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)  // ObservableEnvironment, withObservationTracking
    @Test func aReleasedObjectStopsFollowing() async throws {
        let stack = makeStack()
        #expect(stack.changeSubscriberCount == 0)
        weak var weakObject: ObservableEnvironment<TestApp>?
        do {
            let object = ObservableEnvironment(stack)
            weakObject = object
            #expect(stack.changeSubscriberCount == 1)
            stack.login(user: .ada, token: AuthToken("t"))
            await settle(stack, object)
        }
        #expect(weakObject == nil)
        // Its follower task ends, and with it the subscription: nothing is left behind.
        var spins = 0
        while stack.changeSubscriberCount != 0, spins < 100_000 {
            await Task.yield()
            spins += 1
        }
        #expect(stack.changeSubscriberCount == 0)
    }
}
#endif
