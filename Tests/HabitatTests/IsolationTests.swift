import Foundation
import Habitat
import HabitatPersistence
import Testing

/// One global stack shared by every test in this suite, the way an app shares `AppEnvironment`.
private let sharedStack = EnvironmentStack<TestApp>(makeEnvironment("global"))

/// Many tests at once, in parallel, each logging in its own user on the shared stack inside its
/// own scope, pushing and popping, and checking after every step that it sees only its own environment.
@Suite struct IsolationTests {
    @Test(arguments: 0..<64)
    func parallelTestsNeverSeeEachOther(index: Int) async throws {
        let user = TestUser(id: index, name: "user \(index)")
        let token = AuthToken("token-\(index)")
        try await sharedStack.withEnvironment({ $0.services.label = "mock \(index)" }) {
            #expect(sharedStack.current.session == nil)
            sharedStack.login(user: user, token: token)
            for round in 0..<20 {
                sharedStack.push { $0.config.timeout = index * 1000 + round }
                await Task.yield()
                #expect(sharedStack.current.currentUser == user)
                #expect(sharedStack.current.services.authorization == "Bearer token-\(index)")
                #expect(sharedStack.current.config.timeout == index * 1000 + round)
                #expect(sharedStack.depth == round + 2)
            }
            for _ in 0..<20 { #expect(sharedStack.pop() != nil) }
            #expect(sharedStack.pop() == nil)
            try sharedStack.updateCurrentUser { $0.name += "!" }
            #expect(sharedStack.current.currentUser?.name == "user \(index)!")
            #expect(sharedStack.current.services.label == "mock \(index)")
            sharedStack.logout()
            #expect(sharedStack.current.session == nil)
        }
        #expect(sharedStack.current.services.label == "global")
        #expect(sharedStack.current.session == nil)
        #expect(sharedStack.depth == 1)
    }

    @Test(arguments: 0..<16)
    func syncScopesOnManyThreadsNeverSeeEachOther(index: Int) async {
        await withTaskGroup(of: Bool.self) { group in
            for lane in 0..<4 {
                group.addTask {
                    let id = index * 10 + lane
                    return sharedStack.withEnvironment({ $0.config.timeout = id }) {
                        sharedStack.login(user: TestUser(id: id, name: ""), token: AuthToken("\(id)"))
                        return (0..<200).allSatisfy { _ in
                            sharedStack.current.config.timeout == id && sharedStack.current.currentUser?.id == id
                        }
                    }
                }
            }
            for await isolated in group { #expect(isolated) }
        }
    }
}
