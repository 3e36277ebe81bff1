import Foundation
import Habitat
import Testing

/// A write's change runs without the stack's lock, and commits only if the top is still the one
/// it copied. A change that writes to the same stack on every run moves the top itself each time,
/// so its commit could never land: after 100 such runs the write traps, naming itself, instead
/// of running its change forever. A change that writes once commits on its next run
/// (`StackTests/aChangeRunsAgainOnlyWhenTheTopItCopiedIsGone`); a read inside a change, and a
/// write to another stack, are fine.
@Suite struct ReentrantWriteTests {
    @Test func aChangeMayReadItsStackAndWriteAnother() throws {
        let stack = makeStack()
        let other = makeStack()
        stack.updateConfig { config in
            config.timeout = stack.current.config.timeout * 2
            other.updateConfig { $0.timeout = 1 }
        }
        #expect(stack.current.config.timeout == 60)
        #expect(other.current.config.timeout == 1)
    }

    @Test func aWriteInsideAnUpdatersChangeTraps() async throws {
        let result = try await #require(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let stack = makeStack()
            stack.login(user: .ada, token: AuthToken("t"))
            try? stack.updateCurrentUser { user in
                stack.updateConfig { $0.timeout = 5 }
                user.name = "Ada L."
            }
        }
        let message = String(decoding: result.standardErrorContent, as: UTF8.self)
        #expect(message.contains("written to from inside the change of userUpdated at HabitatTests/ReentrantWriteTests.swift:"), "\(message.prefix(600))")
    }

    @Test func aPushInsideAReplaceTraps() async {
        await #expect(processExitsWith: .failure) {
            let stack = makeStack()
            stack.replaceCurrent { environment in
                stack.push { $0.config.timeout = 7 }
                environment.config.timeout = 9
            }
        }
    }

    /// The route a user meets first: a service told of the new session writes to the stack.
    @Test func aSessionDependentServiceThatWritesToItsStackTraps() async {
        await #expect(processExitsWith: .failure) {
            let stack = EnvironmentStack(HabitatEnvironment<WritingApp>(services: WritingServices()))
            WritingServices.stack.withLock { $0 = stack }
            stack.login(user: .ada, token: AuthToken("t"))
        }
    }
}

/// Services whose `sessionChanged(to:)` writes to the stack they live in.
struct WritingServices: Sendable, SessionDependent {
    static let stack = LockedBox<EnvironmentStack<WritingApp>?>(nil)

    mutating func sessionChanged(to session: UserSession<TestUser>?) {
        Self.stack.withLock { $0 }?.updateConfig { $0.timeout = 1 }
    }
}

enum WritingApp: EnvironmentSchema {
    typealias Services = WritingServices
    typealias User = TestUser
    typealias Config = TestConfig
}
