import Dispatch
import Foundation
import Habitat
import HabitatPersistence
import Testing

@Suite struct ScopeTests {
    @Test func syncScopeChangesCurrentInsideOnly() {
        let stack = makeStack()
        let inside = stack.withEnvironment({ $0.locale = Locale(identifier: "fr_FR") }) {
            stack.current.locale.identifier
        }
        #expect(inside == "fr_FR")
        #expect(stack.current.locale.identifier == "en_US_POSIX")
    }

    @Test func asyncScopeChangesCurrentInsideOnly() async {
        let stack = makeStack()
        let inside = await stack.withEnvironment({ $0.services.label = "mock" }) {
            await Task.yield()
            return stack.current.services.label
        }
        #expect(inside == "mock")
        #expect(stack.current.services.label == "live")
    }

    @Test func scopeIsRestoredWhenTheOperationThrows() async {
        struct Boom: Error, Equatable {}
        let stack = makeStack()
        #expect(throws: Boom.self) {
            try stack.withEnvironment({ $0.config.timeout = 1 }) { () throws(Boom) in
                stack.login(user: .ada, token: AuthToken("t"))
                throw Boom()
            }
        }
        await #expect(throws: Boom.self) {
            try await stack.withEnvironment({ $0.config.timeout = 1 }) { () async throws(Boom) in
                await Task.yield()
                throw Boom()
            }
        }
        #expect(stack.current.config.timeout == 30)
        #expect(stack.current.session == nil)
        #expect(stack.depth == 1)
    }

    @Test func typedErrorsPassThroughUnchanged() {
        let stack = makeStack()
        let result = Result { () throws(SessionError) in
            try stack.withEnvironment({ _ in }) { () throws(SessionError) in
                try stack.updateCurrentUser(.ada)
            }
        }
        #expect(throws: SessionError.notLoggedIn(operation: "updateCurrentUser")) { try result.get() }
    }

    @Test func scopesNestAndUnwind() {
        let stack = makeStack()
        stack.withEnvironment({ $0.config.timeout = 1 }) {
            #expect(stack.current.config.timeout == 1)
            stack.withEnvironment({ $0.config.timeout += 1 }) {
                #expect(stack.current.config.timeout == 2)
                stack.push { $0.config.timeout = 3 }
                #expect(stack.current.config.timeout == 3)
            }
            #expect(stack.current.config.timeout == 1)
            #expect(stack.depth == 1)
        }
        #expect(stack.current.config.timeout == 30)
    }

    @Test func writesInsideAScopeStayInside() {
        let stack = makeStack()
        stack.push { $0.services.label = "outer" }
        stack.withEnvironment({ _ in }) {
            #expect(stack.depth == 1)
            #expect(stack.current.services.label == "outer")
            stack.push { $0.services.label = "inner" }
            stack.login(user: .ada, token: AuthToken("t"))
            stack.updateConfig { $0.timeout = 99 }
            #expect(stack.depth == 2)
            #expect(stack.pop()?.currentUser == .ada)
            #expect(stack.pop() == nil, "the scope's base is never popped")
            stack.replaceCurrent { $0.services.label = "replaced" }
            #expect(stack.current.services.label == "replaced")
        }
        #expect(stack.depth == 2)
        #expect(stack.current.services.label == "outer")
        #expect(stack.current.session == nil)
        #expect(stack.current.config.timeout == 30)
    }

    @Test func changesInsideAScopeGoToTheScopesSubscribersOnly() async {
        let stack = makeStack()
        let outer = stack.changes
        let inner = await stack.withEnvironment({ _ in }) { () async -> [EnvironmentChange<TestApp>] in
            let changes = stack.changes
            stack.login(user: .ada, token: AuthToken("t"))
            return await collect(1, from: changes)
        }
        #expect(inner.map(\.kind) == [.login])
        stack.updateConfig { $0.timeout = 1 }
        let outerObserved = await collect(1, from: outer)
        #expect(outerObserved.map(\.kind) == [.configUpdated], "the outer stream never saw the scoped login")
    }

    @Test func aScopesStreamFinishesWhenTheScopeEnds() async {
        let stack = makeStack()
        let changes = stack.withEnvironment({ _ in }) { stack.changes }
        var count = 0
        for await _ in changes { count += 1 }
        #expect(count == 0)
    }

    @Test func childTasksInheritTheScope() async {
        let stack = makeStack()
        await stack.withEnvironment({ $0.services.label = "scoped" }) {
            async let child = stack.current.services.label
            let unstructured = Task { stack.current.services.label }
            let grouped = await withTaskGroup(of: String.self) { group in
                group.addTask { stack.current.services.label }
                return await group.next()
            }
            #expect(await child == "scoped")
            #expect(await unstructured.value == "scoped")
            #expect(grouped == "scoped")
        }
    }

    @Test func childTasksWriteToTheScopesStack() async {
        let stack = makeStack()
        await stack.withEnvironment({ _ in }) {
            await Task { stack.login(user: .ada, token: AuthToken("t")) }.value
            #expect(stack.current.currentUser == .ada)
        }
        #expect(stack.current.currentUser == nil)
    }

    @Test func anUnstructuredTaskKeepsItsScopeAfterTheScopeReturns() async {
        let stack = makeStack()
        let (gate, open) = AsyncStream.makeStream(of: Void.self)
        let task = stack.withEnvironment({ $0.services.label = "scoped" }) {
            Task { () -> String in
                for await _ in gate { break }
                return stack.current.services.label
            }
        }
        #expect(stack.current.services.label == "live")
        open.yield()
        #expect(await task.value == "scoped")
    }

    @Test func detachedTasksAndDispatchSeeTheGlobalStack() async {
        let stack = makeStack()
        await stack.withEnvironment({ $0.services.label = "scoped" }) {
            let detached = await Task.detached { stack.current.services.label }.value
            let dispatched = await withCheckedContinuation { continuation in
                DispatchQueue.global().async { continuation.resume(returning: stack.current.services.label) }
            }
            #expect(detached == "live")
            #expect(dispatched == "live")
        }
    }

    @Test func capturedEnvironmentCarriesTheScopeIntoEscapingCode() async {
        // The documented pattern: capture the value, and re-enter a scope with it where needed.
        let stack = makeStack()
        await stack.withEnvironment({ $0.services.label = "scoped" }) {
            let captured = stack.current
            let (label, reentered) = await withCheckedContinuation { continuation in
                DispatchQueue.global().async {
                    let label = captured.services.label
                    let reentered = stack.withEnvironment(captured) { stack.current.services.label }
                    continuation.resume(returning: (label, reentered))
                }
            }
            #expect(label == "scoped")
            #expect(reentered == "scoped")
            let detached = await Task.detached {
                stack.withEnvironment(captured) { stack.current.services.label }
            }.value
            #expect(detached == "scoped")
        }
    }

    @Test func aScopeOfOneStackDoesNotAffectAnother() {
        let a = makeStack("a")
        let b = makeStack("b")
        a.withEnvironment({ $0.services.label = "a scoped" }) {
            #expect(b.current.services.label == "b")
            b.withEnvironment({ $0.services.label = "b scoped" }) {
                #expect(a.current.services.label == "a scoped")
                #expect(b.current.services.label == "b scoped")
            }
        }
    }

    @Test func reusedScopesNestUnderWhicheverScopeIsCurrent() {
        // Ended scopes are pooled and reused; each reuse must sit under the scopes current at
        // the time, whatever it sat under before.
        let a = makeStack("a")
        let b = makeStack("b")
        for round in 0..<3 {
            b.withEnvironment({ $0.services.label = "b\(round)" }) {
                a.withEnvironment({ $0.services.label = "a\(round)" }) {
                    a.withEnvironment({ $0.services.label = "a inner" }) {
                        #expect(a.current.services.label == "a inner")
                        #expect(b.current.services.label == "b\(round)")
                    }
                    #expect(a.current.services.label == "a\(round)")
                }
            }
            a.withEnvironment({ $0.services.label = "A\(round)" }) {
                b.withEnvironment({ $0.services.label = "B\(round)" }) {
                    #expect(a.current.services.label == "A\(round)")
                    #expect(b.current.services.label == "B\(round)")
                }
                #expect(b.current.services.label == "b")
            }
            #expect(a.current.services.label == "a")
            #expect(b.current.services.label == "b")
        }
    }

    @Test @MainActor func mainActorCallersKeepTheirIsolation() async {
        let stack = makeStack()
        let label = await stack.withEnvironment({ $0.services.label = "main" }) {
            MainActor.assertIsolated()
            await Task.yield()
            return stack.current.services.label
        }
        #expect(label == "main")
    }

    @Test func aScopeStartsCleanEvenWhenItReusesAnEndedScopesState() async {
        let stack = makeStack()
        for round in 0..<5 {
            let observed = await stack.withEnvironment({ $0.config.timeout = round }) { () async -> [EnvironmentChange<TestApp>] in
                #expect(stack.depth == 1, "round \(round)")
                #expect(stack.current.session == nil)
                #expect(stack.current.config.timeout == round)
                let changes = stack.changes
                stack.push { $0.services.label = "pushed \(round)" }
                stack.push { $0.services.label = "pushed again" }
                stack.login(user: .ada, token: AuthToken("t\(round)"))
                return await collect(3, from: changes)
            }
            #expect(observed.map(\.sequence) == [1, 2, 3], "numbering restarts in each scope")
        }
        #expect(stack.depth == 1)
        #expect(stack.current.config.timeout == 30)
    }

    @Test func aScopeWhoseTaskOutlivesItIsNotReused() async {
        let stack = makeStack()
        let (gate, open) = AsyncStream.makeStream(of: Void.self)
        let survivor = stack.withEnvironment({ $0.services.label = "first" }) {
            stack.push { $0.config.timeout = 1 }
            return Task { () -> (String, Int, Int) in
                for await _ in gate { break }
                return (stack.current.services.label, stack.current.config.timeout, stack.depth)
            }
        }
        stack.withEnvironment({ $0.services.label = "second" }) {
            #expect(stack.depth == 1)
            #expect(stack.current.services.label == "second")
        }
        open.yield()
        let (label, timeout, depth) = await survivor.value
        #expect(label == "first")
        #expect(timeout == 1)
        #expect(depth == 2)
    }
}
