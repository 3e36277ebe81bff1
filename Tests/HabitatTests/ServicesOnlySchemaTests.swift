import Foundation
import Habitat
import HabitatPersistence
import Testing

/// An app that names only its services, as the README's quick start writes it.
private struct GreeterOnlyServices: Sendable {
    var greet: @Sendable (String) -> String
}

private enum ServicesOnlySchema: EnvironmentSchema {
    typealias Services = GreeterOnlyServices
}

/// The default user type: an app without sessions must build wherever Habitat does, so its
/// default can't be `Never` (whose `Codable` needs iOS 17 / macOS 14); `Scripts/check-apple.sh`
/// compiles this schema's shape at iOS 16 / macOS 13.
@Suite struct ServicesOnlySchemaTests {
    @Test func theDefaultUserIsHabitatsOwnUninhabitedType() {
        #expect(ObjectIdentifier(ServicesOnlySchema.User.self) == ObjectIdentifier(NoUser.self))
        #expect(ObjectIdentifier(ServicesOnlySchema.Config.self) == ObjectIdentifier(NoConfig.self))
    }

    @Test func aServicesOnlyStackWorks() {
        let stack = EnvironmentStack<ServicesOnlySchema>(HabitatEnvironment(services: GreeterOnlyServices(greet: { "Hello, \($0)" })))
        #expect(stack.current.services.greet("Ada") == "Hello, Ada")
        #expect(stack.current.session == nil)
        stack.push { $0.services.greet = { "Hi, \($0)" } }
        #expect(stack.current.services.greet("Ada") == "Hi, Ada")
        #expect(stack.pop() != nil)
        #expect(stack.current.services.greet("Ada") == "Hello, Ada")
    }

    @Test func aSavedUserNeverDecodesAsNoUser() throws {
        let error = #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(NoUser.self, from: Data(#"{"id":1}"#.utf8))
        }
        guard case .typeMismatch(let type, let context) = error else {
            Issue.record("expected a type mismatch, got \(String(describing: error))")
            return
        }
        #expect(ObjectIdentifier(type) == ObjectIdentifier(NoUser.self))
        #expect(context.debugDescription.contains("signs nobody in"))
    }

    @Test func aSnapshotOfAServicesOnlyAppRoundTripsItsConfiguration() throws {
        let stack = EnvironmentStack<ServicesOnlySchema>(HabitatEnvironment(services: GreeterOnlyServices(greet: { $0 })))
        let sessions = SessionStore<ServicesOnlySchema>.inMemory()
        try sessions.save(stack.current)
        let snapshot = try #require(try sessions.load())
        #expect(snapshot.session == nil)
    }
}
