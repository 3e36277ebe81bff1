import Foundation
import Habitat
import HabitatPersistence
import Testing

/// `PublishedEnvironment`, the `ObservableObject` for iOS 16 / macOS 13 apps, follows the stack
/// as `ObservableEnvironment` does. (Combine, and so SwiftUI's redraw, exists only on Apple
/// platforms; here the class follows without it, which is what a view model's tests use.)
@MainActor
@Suite struct PublishedEnvironmentTests {
    @Test func itStartsFromTheStacksCurrentEnvironment() {
        let stack = makeAccountsStack()
        stack.login(user: .ada, token: memberToken(.ada, 1))
        let object = PublishedEnvironment(stack)
        #expect(object.session?.user == .ada && object.otherAccounts.isEmpty)
    }

    @Test func itFollowsLoginsAccountsLogoutsAndTheConfiguration() async throws {
        let stack = makeStack()
        let object = PublishedEnvironment(stack)
        stack.login(user: .ada, token: AuthToken("a"))
        try await eventually { object.session?.user == .ada }
        stack.updateConfig { $0.timeout = 5 }
        try await eventually { object.config.timeout == 5 }
        stack.logout()
        try await eventually { object.session == nil }
    }

    @Test func itFollowsTheOtherAccounts() async throws {
        let stack = makeAccountsStack()
        let object = PublishedEnvironment(stack)
        stack.login(user: .ada, token: memberToken(.ada, 1))
        stack.addAccount(user: .grace, token: memberToken(.grace, 2))
        try await eventually { object.session?.user == .grace && object.otherAccounts.map(\.user) == [.ada] }
        stack.logoutAll()
        try await eventually { object.session == nil && object.otherAccounts.isEmpty }
    }

    @Test func madeInAScopeItFollowsTheScopesStack() async throws {
        let stack = makeStack()
        let outside = PublishedEnvironment(stack)
        try await stack.withEnvironment({ $0.config.timeout = 1 }) {
            let object = PublishedEnvironment(stack)
            #expect(object.config.timeout == 1)
            stack.login(user: .ada, token: AuthToken("a"))
            try await eventually { object.session?.user == .ada }
        }
        stack.updateConfig { $0.timeout = 7 }
        try await eventually { outside.config.timeout == 7 }
        #expect(outside.session == nil, "the scope's login stayed in the scope")
    }

    @Test func aReleasedObjectIsNotKeptAliveByItsFollower() {
        let stack = makeStack()
        weak var released: PublishedEnvironment<TestApp>?
        do {
            let object = PublishedEnvironment(stack)
            released = object
            #expect(released != nil)
        }
        #expect(released == nil)
        stack.login(user: .ada, token: AuthToken("a"))
        #expect(stack.current.session?.user == .ada)
    }
}
