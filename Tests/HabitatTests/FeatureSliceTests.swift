import Foundation
import Habitat
import HabitatPersistence
import Testing

/// What a feature module declares it needs.
private struct GreetingServices: Sendable {
    var greeting: String
    /// Filled by the app's session handling: the signed-in member's name.
    var memberName: String?
}

/// A feature's model, which knows only its slice.
private struct GreetingModel: Sendable {
    let environment: EnvironmentSlice<GreetingServices>
    func greet() -> String { "\(environment.services.greeting), \(environment.services.memberName ?? "guest")" }
}

/// The app's services, holding the feature's.
private struct ComposedServices: Sendable, SessionDependent {
    var label = "app"
    var greetings = GreetingServices(greeting: "Hello")

    /// A feature's services made from the app's own: one greeting, shared.
    var shared: GreetingServices {
        get { GreetingServices(greeting: label, memberName: greetings.memberName) }
        set { label = newValue.greeting; greetings.memberName = newValue.memberName }
    }

    mutating func sessionChanged(to session: UserSession<TestUser>?) {
        greetings.memberName = session?.user.name
    }
}

private enum ComposedApp: EnvironmentSchema {
    typealias Services = ComposedServices
    typealias User = TestUser
}

@Suite struct FeatureSliceTests {
    private func makeApp() -> EnvironmentStack<ComposedApp> {
        EnvironmentStack(HabitatEnvironment(services: ComposedServices()))
    }

    @Test func aSliceReadsTheAppsEnvironment() {
        let app = makeApp()
        let model = GreetingModel(environment: app.slice(\.greetings))
        #expect(model.greet() == "Hello, guest")
        app.push { $0.services.greetings.greeting = "Hi" }
        #expect(model.greet() == "Hi, guest")
        app.pop()
        #expect(model.greet() == "Hello, guest")
    }

    @Test func aLoginReachesTheFeatureInTheSameStep() {
        let app = makeApp()
        let model = GreetingModel(environment: app.slice(\.greetings))
        app.login(user: .ada, token: AuthToken("t"))
        #expect(model.greet() == "Hello, Ada")
        app.logout()
        #expect(model.greet() == "Hello, guest")
    }

    @Test func aScopeMadeThroughTheSliceIsTheAppsScope() async {
        let app = makeApp()
        let slice = app.slice(\.greetings)
        let inside = await slice.withServices({ $0.greeting = "Bonjour" }) {
            await Task.yield()
            return (app.current.services.greetings.greeting, app.current.services.label)
        }
        #expect(inside == ("Bonjour", "app"))
        #expect(app.current.services.greetings.greeting == "Hello")
        let sync = slice.withServices({ $0.greeting = "Hallo" }) { app.current.services.greetings.greeting }
        #expect(sync == "Hallo")
    }

    @Test func theAppsScopeIsSeenThroughTheSlice() async {
        let app = makeApp()
        let model = GreetingModel(environment: app.slice(\.greetings))
        let inside = await app.withEnvironment({ $0.services.greetings.greeting = "Hola" }) {
            await Task.yield()
            return model.greet()
        }
        #expect(inside == "Hola, guest")
        #expect(model.greet() == "Hello, guest")
    }

    @Test func aPushThroughTheSliceIsTheAppsPush() {
        let app = makeApp()
        let slice = app.slice(\.greetings)
        slice.push { $0.greeting = "Ciao" }
        #expect(app.depth == 2)
        #expect(app.current.services.greetings.greeting == "Ciao")
        #expect(slice.pop()?.greeting == "Ciao")
        #expect(slice.pop() == nil, "the base is never popped")
        #expect(app.depth == 1)
    }

    @Test func parallelScopesEachSeeTheirOwnThroughTheSlice() async {
        let app = makeApp()
        let model = GreetingModel(environment: app.slice(\.greetings))
        let computed = app.slice(\.shared)
        await withTaskGroup(of: Bool.self) { group in
            for index in 0..<200 {
                group.addTask {
                    await app.withEnvironment({ $0.services.greetings.greeting = "G\(index)"; $0.services.label = "L\(index)" }) {
                        await Task.yield()
                        if index.isMultiple(of: 3) { app.push { $0.services.greetings.memberName = "M\(index)" } }
                        let expected = "G\(index), " + (index.isMultiple(of: 3) ? "M\(index)" : "guest")
                        return model.greet() == expected && computed.services.greeting == "L\(index)"
                    }
                }
            }
            for await seen in group { #expect(seen) }
        }
        #expect(model.greet() == "Hello, guest")
    }

    @Test func aComputedSliceReadsAndWritesTheAppsOwnServices() {
        let app = makeApp()
        let slice = app.slice(\.shared)
        #expect(GreetingModel(environment: slice).greet() == "app, guest")
        let inside = slice.withServices({ $0.greeting = "Servus" }) { app.current.services.label }
        #expect(inside == "Servus")
        app.push { $0.services.label = "Salut" }
        #expect(GreetingModel(environment: slice).greet() == "Salut, guest")
    }

    @Test func aTestSliceIsAnEnvironmentOfItsOwn() {
        let first = EnvironmentSlice.test(GreetingServices(greeting: "One"))
        let second = EnvironmentSlice.test(GreetingServices(greeting: "Two"))
        first.push { $0.memberName = "Ada" }
        #expect(GreetingModel(environment: first).greet() == "One, Ada")
        #expect(GreetingModel(environment: second).greet() == "Two, guest")
        #expect(first.now() == Date(timeIntervalSinceReferenceDate: 0))
    }

    @Test func basicsComeFromTheCallersEnvironment() {
        let app = makeApp()
        let slice = app.slice(\.greetings)
        let (zone, locale, calendar, now) = app.withEnvironment({
            $0.timeZone = TimeZone(identifier: "Asia/Tokyo")!
            $0.locale = Locale(identifier: "ja_JP")
            $0.calendar = Calendar(identifier: .japanese)
            $0.now = { Date(timeIntervalSince1970: 42) }
        }) {
            (slice.timeZone.identifier, slice.locale.identifier, slice.calendar.identifier, slice.now())
        }
        #expect(zone == "Asia/Tokyo")
        #expect(locale == "ja_JP")
        #expect(calendar == .japanese)
        #expect(now == Date(timeIntervalSince1970: 42))
        #expect(slice.timeZone.identifier != "Asia/Tokyo" || TimeZone.current.identifier == "Asia/Tokyo", "outside the scope, the app's")
    }
}
