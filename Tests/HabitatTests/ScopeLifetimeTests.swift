import Foundation
import Testing

@testable import Habitat

/// What an ended scope leaves behind: nothing of its environment, and its state in the stack's
/// pool for the next scope.
@Suite struct ScopeLifetimeTests {
    /// An object that only a scope's environment holds (its clock captures it).
    final class Held: Sendable {
        let date: Date
        init(_ seconds: Double) { date = Date(timeIntervalSince1970: seconds) }
    }

    /// Weak references to the objects a test's scopes held.
    final class Watch: @unchecked Sendable {
        // Safe: used by one task at a time (the test, and the scopes it runs in turn).
        private var references: [() -> AnyObject?] = []
        func watch(_ object: AnyObject) { references.append { [weak object] in object } }
        var alive: Int { references.filter { $0() != nil }.count }
    }

    @Test func aScopesEnvironmentIsReleasedWhenTheScopeEnds() {
        let stack = makeStack()
        let watch = Watch()
        do {
            let held = Held(42)
            watch.watch(held)
            stack.withEnvironment({ $0.now = { held.date } }) {
                #expect(stack.current.now() == held.date)
                stack.push { $0.config.timeout = 9 }
                #expect(stack.current.now() == held.date)
            }
        }
        #expect(watch.alive == 0, "the pooled state still holds the scope's environment")
        #expect(stack.current.now() == fixedDate)
        stack.withEnvironment({ $0.config.timeout = 3 }) {
            #expect(stack.current.now() == fixedDate, "the reused state starts from the stack's top")
            #expect(stack.current.config.timeout == 3)
        }
    }

    @Test func anAsyncScopesEnvironmentIsReleasedWhenTheScopeEnds() async {
        let stack = makeStack()
        let watch = Watch()
        do {
            let held = Held(7)
            watch.watch(held)
            await stack.withEnvironment({ $0.now = { held.date } }) {
                await Task.yield()
                #expect(stack.current.now() == held.date)
            }
        }
        #expect(watch.alive == 0, "the pooled state still holds the scope's environment")
    }

    /// A server starts a batch of requests before any ends: every one of the states goes back
    /// to the pool (it kept 8), and none keeps its scope's environment.
    @Test func scopesOpenAtOnceAreAllPooledAndHoldNothing() {
        let stack = makeStack()
        let watch = Watch()
        func nest(_ depth: Int) {
            guard depth > 0 else { return #expect(stack.current.now() == Date(timeIntervalSince1970: 1)) }
            let held = Held(Double(depth))
            watch.watch(held)
            stack.withEnvironment({ $0.now = { held.date } }) {
                #expect(stack.current.now() == held.date)
                nest(depth - 1)
            }
        }
        nest(64)
        #expect(stack.scopePool.withLock { $0.count } == 64)
        #expect(watch.alive == 0)
        nest(64)
        #expect(stack.scopePool.withLock { $0.count } == 64, "the second burst reused the first one's states")
        #expect(stack.current.now() == fixedDate)
    }
}
