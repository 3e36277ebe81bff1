import Dispatch
import Foundation
import Testing

@testable import Habitat
@testable import HabitatPersistence

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
        // Safe: `references` is only touched with `lock` held.
        private let lock = NSLock()
        private var references: [() -> AnyObject?] = []
        func watch(_ object: AnyObject) { lock.withLock { references.append { [weak object] in object } } }
        var alive: Int { lock.withLock { references.filter { $0() != nil }.count } }
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

    /// Two child tasks read the scope on two threads (each waits, briefly, until the other has
    /// read), whose reader slots then hold its top frame; the environment goes when the scope
    /// ends all the same, and the threads let go of the emptied frame when they next read.
    @Test func aScopesEnvironmentIsReleasedWhenOtherThreadsReadIt() async {
        let stack = makeStack()
        let watch = Watch()
        for round in 0..<10 {
            do {
                let held = Held(Double(round))
                watch.watch(held)
                await stack.withEnvironment({ $0.now = { held.date } }) {
                    let (first, second) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
                    async let a: Date = {
                        let date = stack.current.now()
                        first.signal()
                        _ = second.wait(timeout: .now() + 5)
                        return date
                    }()
                    async let b: Date = {
                        _ = first.wait(timeout: .now() + 5)
                        defer { second.signal() }
                        return stack.current.now()
                    }()
                    #expect(await [a, b] == [held.date, held.date])
                }
            }
            #expect(watch.alive == 0, "round \(round): a thread's reader slot kept the scope's environment")
            // NB: the next round's scope starts while the other thread's slot may still hold the
            // emptied frame: it gets a new frame, and that thread frees the old one at its next
            // read, in the next round.
        }
        async let a = stack.current.now()
        async let b = stack.current.now()
        #expect(await [a, b] == [fixedDate, fixedDate])
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
