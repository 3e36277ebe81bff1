import Foundation
@testable import Habitat
@testable import HabitatPersistence
import Testing

/// Concurrent refreshes of one session share one request (servers that rotate refresh tokens
/// revoke a session whose old token is used twice).
@Suite(.timeLimit(.minutes(1))) struct RefreshTests {
    /// A logged-in stack whose token is unique to the test, so the tests can count the callers
    /// waiting for its refresh while other tests run.
    func loggedInStack() -> (EnvironmentStack<TestApp>, AuthToken) {
        let token = AuthToken("old-\(UUID().uuidString)")
        let stack = makeStack()
        stack.login(user: .ada, token: token)
        return (stack, token)
    }

    /// Waits until a refresh of `token` is in the air and `count` callers wait for it.
    ///
    /// NB: by sleeping, not `Task.yield()`: a yielding loop keeps one of the cooperative pool's
    /// two threads busy, and a few of them at once, under the thread sanitizer, starved the
    /// suite's other waits past their time limits.
    func waitForWaiters(_ count: Int, token: AuthToken, on stack: EnvironmentStack<TestApp>) async {
        while (stack.refreshes.waiterCount(token: token.secret) ?? -1) < count {
            try? await Task.sleep(for: .microseconds(200))
        }
    }

    /// Starts a refresh that answers a "fresh" token once `release` opens, and returns once it
    /// is in the air.
    func startLeader(on stack: EnvironmentStack<TestApp>, token: AuthToken, until release: Gate) async -> Task<SessionRefreshOutcome, Never> {
        let leader = Task {
            await stack.refreshSession { _ in
                await release.wait()
                return .refreshed(token: AuthToken("fresh"))
            }
        }
        await waitForWaiters(0, token: token, on: stack)
        return leader
    }

    @Test func aHundredConcurrentCallersMakeOneRequest() async throws {
        let (stack, old) = loggedInStack()
        let calls = Counter()
        let release = Gate()
        let fresh = AuthToken("fresh")
        let outcomes = await withTaskGroup(of: SessionRefreshOutcome.self) { group in
            for _ in 0..<100 {
                group.addTask {
                    await stack.refreshSession { _ in
                        calls.increment()
                        await release.wait()
                        return .refreshed(token: fresh)
                    }
                }
            }
            await waitForWaiters(99, token: old, on: stack)
            release.open()
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(calls.value == 1)
        #expect(outcomes.count == 100)
        #expect(outcomes.allSatisfy { $0 == .refreshed })
        #expect(stack.current.session?.token == fresh)
        #expect(stack.current.session?.state == .authenticated)
        #expect(stack.current.services.tokenChanges == 2, "login, then one refresh")
    }

    /// Twenty callers refresh `stack`'s session (token `old`) at once, with a refresh that
    /// counts its calls in `calls`, waits until all are in, then throws `error`; returns what each
    /// caller got.
    func twentyRefreshesThatThrow(
        _ error: any Error & Sendable,
        on stack: EnvironmentStack<TestApp>,
        token old: AuthToken,
        counting calls: Counter
    ) async -> [Result<SessionRefreshOutcome, any Error>] {
        let release = Gate()
        return await withTaskGroup(of: Result<SessionRefreshOutcome, any Error>.self) { group in
            for _ in 0..<20 {
                group.addTask {
                    do {
                        return .success(try await stack.refreshSession { _ in
                            calls.increment()
                            await release.wait()
                            throw error
                        })
                    } catch {
                        return .failure(error)
                    }
                }
            }
            await waitForWaiters(19, token: old, on: stack)
            release.open()
            return await group.reduce(into: []) { $0.append($1) }
        }
    }

    /// Offline: the request never left, so nothing was spent, and the session stays.
    @Test func aRefreshThatNeverLeftFailsEveryCallerAndChangesNothing() async throws {
        let (stack, old) = loggedInStack()
        let calls = Counter()
        let results = await twentyRefreshesThatThrow(URLError(.cannotConnectToHost), on: stack, token: old, counting: calls)
        #expect(calls.value == 1)
        #expect(results.allSatisfy { if case .failure(let error as URLError) = $0 { error.code == .cannotConnectToHost } else { false } })
        #expect(stack.current.session?.token == old)
        #expect(stack.current.session?.state == .authenticated)
    }

    /// A refresh whose answer was lost (the connection dropped, an error after the server
    /// rotated the token) may have spent the token: the session ends for every caller, and the
    /// token is never sent again.
    @Test func aLostAnswerEndsTheSessionForEveryCallerAndIsNeverRetried() async throws {
        struct ConnectionDropped: Error {}
        let (stack, old) = loggedInStack()
        let calls = Counter()
        let results = await twentyRefreshesThatThrow(ConnectionDropped(), on: stack, token: old, counting: calls)
        #expect(calls.value == 1)
        #expect(results.filter { if case .failure(let error) = $0 { error is ConnectionDropped } else { false } }.count == 1, "the leader throws")
        #expect(results.filter { if case .success(.ended(expired: false)) = $0 { true } else { false } }.count == 19, "the others hear it ended")
        #expect(stack.current.session == nil)
        #expect(await stack.refreshSession { _ in calls.increment(); return .ended } == .notLoggedIn)
        #expect(calls.value == 1, "never sent again")
    }

    @Test func anEndedSessionEndsForEveryCaller() async throws {
        let (stack, old) = loggedInStack()
        let release = Gate()
        let calls = Counter()
        let outcomes = await withTaskGroup(of: SessionRefreshOutcome.self) { group in
            for _ in 0..<10 {
                group.addTask {
                    await stack.refreshSession { _ in
                        calls.increment()
                        await release.wait()
                        return .ended
                    }
                }
            }
            await waitForWaiters(9, token: old, on: stack)
            release.open()
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(calls.value == 1)
        #expect(outcomes.allSatisfy { $0 == .ended(expired: false) })
        #expect(stack.current.session == nil)
    }

    /// A waiting caller whose task is cancelled still gets the shared outcome, and the request
    /// goes on for the others.
    @Test func aCancelledWaiterDoesNotCancelTheRequest() async throws {
        let (stack, old) = loggedInStack()
        let release = Gate()
        let leader = await startLeader(on: stack, token: old, until: release)
        let waiter = Task {
            await stack.refreshSession { _ in
                Issue.record("the waiter must not refresh")
                return .ended
            }
        }
        await waitForWaiters(1, token: old, on: stack)
        waiter.cancel()
        release.open()
        #expect(await waiter.value == .refreshed)
        #expect(await leader.value == .refreshed)
    }

    /// A leader cancelled before its request left says so (`.notSent`): nothing was spent,
    /// whoever waited hears it, the session stays, and a later refresh asks again.
    @Test func aLeaderCancelledBeforeSendingLeavesTheTokenForTheNextTry() async throws {
        let (stack, old) = loggedInStack()
        let release = Gate()
        let leader = Task {
            await stack.refreshSession { _ in
                await release.wait()
                if Task.isCancelled { return .notSent }
                return .refreshed(token: AuthToken("never"))
            }
        }
        await waitForWaiters(0, token: old, on: stack)
        let waiter = Task {
            await stack.refreshSession { _ in .refreshed(token: AuthToken("not asked")) }
        }
        await waitForWaiters(1, token: old, on: stack)
        leader.cancel()
        release.open()
        #expect(await leader.value == .notSent)
        #expect(await waiter.value == .notSent)
        #expect(stack.current.session?.token == old)
        #expect(await stack.refreshSession { _ in .refreshed(token: AuthToken("fresh")) } == .refreshed)
        #expect(stack.current.session?.token == AuthToken("fresh"))
    }

    /// A leader cancelled once its request may have left (`CancellationError` from the
    /// network call) may have spent the token: the session ends, and no waiter sends it again.
    @Test func aLeaderCancelledAfterSendingEndsTheSession() async throws {
        let (stack, old) = loggedInStack()
        let release = Gate()
        let sent = Counter()
        let leader = Task {
            try await stack.refreshSession { _ in
                sent.increment()
                await release.wait()
                try Task.checkCancellation()
                return .refreshed(token: AuthToken("never"))
            }
        }
        await waitForWaiters(0, token: old, on: stack)
        let waiter = Task {
            await stack.refreshSession { _ in
                sent.increment()
                return .refreshed(token: AuthToken("fresh"))
            }
        }
        await waitForWaiters(1, token: old, on: stack)
        leader.cancel()
        release.open()
        await #expect(throws: CancellationError.self) { try await leader.value }
        #expect(await waiter.value == .ended(expired: false))
        #expect(sent.value == 1)
        #expect(stack.current.session == nil)
    }

    /// Scopes are environments of their own: two scopes with the same token each make their request.
    @Test func scopesDoNotShareARequest() async throws {
        let stack = makeStack()
        let token = AuthToken("shared-\(UUID().uuidString)")
        let calls = Counter()
        let release = Gate()
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<2 {
                group.addTask {
                    await stack.withEnvironment({ $0.session = UserSession(user: .ada, token: token) }) {
                        let outcome = await stack.refreshSession { _ in
                            calls.increment()
                            await release.wait()
                            return .refreshed(token: AuthToken("fresh-\(index)"))
                        }
                        #expect(outcome == .refreshed)
                        #expect(stack.current.session?.token == AuthToken("fresh-\(index)"))
                    }
                }
            }
            while calls.value < 2 { await Task.yield() }
            release.open()
        }
        #expect(calls.value == 2)
    }

    /// With autosave on, the new token is on disk before any waiting caller resumes.
    @Test func theNewTokenIsSavedBeforeWaitersResume() async throws {
        let (stack, old) = loggedInStack()
        let sessions = SessionStore<TestApp>(store: InMemoryStore(), secrets: InMemorySecretStore())
        stack.enableAutosave(to: sessions)
        let release = Gate()
        let leader = await startLeader(on: stack, token: old, until: release)
        let waiter = Task { () -> AuthToken? in
            _ = await stack.refreshSession { _ in .ended }
            return try? sessions.load()?.session?.token
        }
        await waitForWaiters(1, token: old, on: stack)
        release.open()
        #expect(await waiter.value == AuthToken("fresh"))
        _ = await leader.value
    }
}

final class Counter: Sendable {
    private let count = LockedBox(0)
    func increment() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}

/// A one-way gate: `wait()` returns once `open()` was called.
final class Gate: @unchecked Sendable {
    // Safe: `isOpen` and `waiters` are only touched with `lock` held.
    private let lock = NSLock()
    private var isOpen = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    func wait() async {
        await withCheckedContinuation { continuation in
            lock.lock()
            if isOpen {
                lock.unlock()
                continuation.resume()
            } else {
                waiters.append(continuation)
                lock.unlock()
            }
        }
    }

    func open() {
        lock.lock()
        isOpen = true
        let waiting = waiters
        waiters = []
        lock.unlock()
        for waiter in waiting { waiter.resume() }
    }
}

@Suite struct ValidSessionTests {
    func stack(expiringIn seconds: TimeInterval?) -> EnvironmentStack<TestApp> {
        let stack = makeStack()
        stack.login(user: .ada, token: AuthToken("old-\(UUID().uuidString)", expiresAt: seconds.map { fixedDate.addingTimeInterval($0) }))
        return stack
    }

    @Test func aTokenFarFromExpiryIsReturnedWithoutARefresh() async {
        let stack = stack(expiringIn: 3600)
        let session = await stack.validSession { _ in
            Issue.record("no refresh needed")
            return .ended
        }
        #expect(session == stack.current.session)
        #expect(session != nil)
    }

    @Test func aTokenWithoutExpiryIsNeverRefreshed() async {
        let stack = stack(expiringIn: nil)
        let session = await stack.validSession { _ in
            Issue.record("no refresh needed")
            return .ended
        }
        #expect(session?.user == .ada)
    }

    @Test(arguments: [-10.0, 0, 30, 59])
    func aTokenWithinTheMarginIsRefreshedFirst(_ secondsLeft: TimeInterval) async {
        let stack = stack(expiringIn: secondsLeft)
        let fresh = AuthToken("fresh", expiresAt: fixedDate.addingTimeInterval(3600))
        let session = await stack.validSession(refreshingWithin: .seconds(60)) { _ in .refreshed(token: fresh) }
        #expect(session?.token == fresh)
        #expect(session?.state == .authenticated)
        #expect(stack.current.session?.token == fresh)
    }

    @Test func anEndedSessionGivesNil() async {
        let stack = stack(expiringIn: 0)
        #expect(await stack.validSession { _ in .ended } == nil)
        #expect(stack.current.session == nil)
    }

    @Test func nobodyLoggedInGivesNil() async {
        #expect(await makeStack().validSession { _ in .ended } == nil)
    }

    @Test func requestsThatFindTheTokenExpiringShareOneRefresh() async {
        let stack = stack(expiringIn: 5)
        let calls = Counter()
        let fresh = AuthToken("fresh", expiresAt: fixedDate.addingTimeInterval(3600))
        let sessions = await withTaskGroup(of: UserSession<TestUser>?.self) { group in
            for _ in 0..<50 {
                group.addTask {
                    await stack.validSession { _ in
                        calls.increment()
                        return .refreshed(token: fresh)
                    }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(calls.value == 1)
        #expect(sessions.allSatisfy { $0?.token == fresh })
    }
}
