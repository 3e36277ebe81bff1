import Foundation
import Habitat
import HabitatPersistence
import HabitatOperators
import Testing

@Suite struct LensTests {
    let timeout = Lens(\TestEnvironment.config).appending(Lens(\.timeout))
    let userName = Lens(\TestEnvironment.session).optional(Lens(\.user.name))
    let loggedIn = makeEnvironment().with(\.session, UserSession(user: .ada, token: AuthToken("t")))

    @Test(arguments: [0, 1, 30, -5])
    func keyPathLensObeysTheLaws(value: Int) {
        let lens = Lens(\TestConfig.timeout)
        let root = TestConfig(timeout: 7, features: ["a"])
        #expect(lens.get(lens.set(value, in: root)) == value)  // set-get
        #expect(lens.set(lens.get(root), in: root) == root)  // get-set
        #expect(lens.set(value + 1, in: lens.set(value, in: root)) == lens.set(value + 1, in: root))  // set-set
    }

    @Test(arguments: [1, 99])
    func composedLensObeysTheLaws(value: Int) {
        let root = makeEnvironment()
        #expect(timeout.get(timeout.set(value, in: root)) == value)
        #expect(timeout.set(timeout.get(root), in: root).config == root.config)
        #expect(timeout.set(value + 1, in: timeout.set(value, in: root)).config == timeout.set(value + 1, in: root).config)
    }

    @Test func composedLensChangesOnlyItsFocus() {
        let changed = timeout.set(5, in: loggedIn)
        #expect(changed.config.timeout == 5)
        #expect(changed.config.features == loggedIn.config.features)
        #expect(changed.currentUser == .ada)
    }

    @Test func optionalLensReadsAndSetsWhenPresent() {
        #expect(userName.get(loggedIn) == "Ada")
        let renamed = userName.set("Ada L.", in: loggedIn)
        #expect(renamed.currentUser?.name == "Ada L.")
        // The laws, where the optional is present:
        #expect(userName.get(userName.set("B", in: loggedIn)) == "B")
        #expect(userName.set(userName.get(loggedIn), in: loggedIn).session == loggedIn.session)
        #expect(userName.set("C", in: userName.set("B", in: loggedIn)).session == userName.set("C", in: loggedIn).session)
    }

    @Test func optionalLensLeavesAMissingValueMissing() {
        let loggedOut = makeEnvironment()
        #expect(userName.get(loggedOut) == nil)
        #expect(userName.set("X", in: loggedOut).session == nil)
        // Setting nil can't remove a non-optional field: the root is unchanged.
        #expect(userName.set(nil, in: loggedIn).currentUser == .ada)
    }

    @Test func lensFromGetterAndSetter() {
        let doubled = Lens<TestConfig, Int>(get: { $0.timeout * 2 }, set: { value, root in
            root.with(\.timeout, value / 2)
        })
        #expect(doubled.get(TestConfig(timeout: 4)) == 8)
        #expect(doubled.set(10, in: TestConfig()).timeout == 5)
    }

    @Test func updatersAcceptLenses() {
        #expect(loggedIn.with(timeout, 3).config.timeout == 3)
        #expect(loggedIn.over(timeout) { $0 + 1 }.config.timeout == 31)
        #expect(TestUser.ada.with(\.name, "A").name == "A")
    }
}
