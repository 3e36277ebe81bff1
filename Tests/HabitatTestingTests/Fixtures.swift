import Foundation
import Habitat
import HabitatPersistence
import HabitatTesting

struct User: Codable, Sendable, Equatable {
    var id: Int
    var name: String
}

struct Config: Codable, Sendable, Equatable {
    var greeting = "Hello"
}

struct APIClient: Sendable {
    var fetchUser: @Sendable (Int) async throws -> User
    var fetchUserSync: @Sendable (Int) throws -> User
    var ping: @Sendable () async -> Bool
    var count: @Sendable () -> Int
    var track: @Sendable (String) -> Void
    var trackAsync: @Sendable (String, Int) async -> Void

    static let unimplemented = APIClient(
        fetchUser: unimplementedEndpoint("APIClient.fetchUser"),
        fetchUserSync: unimplementedEndpoint("APIClient.fetchUserSync"),
        ping: unimplementedEndpoint("APIClient.ping", placeholder: false),
        count: unimplementedEndpoint("APIClient.count", placeholder: -1),
        track: unimplementedEndpoint("APIClient.track"),
        trackAsync: unimplementedEndpoint("APIClient.trackAsync")
    )
}

struct Services: Sendable {
    var api: APIClient = .unimplemented
    var label = "unimplemented"
}

enum TestingApp: EnvironmentSchema {
    typealias Services = HabitatTestingTests.Services
    typealias User = HabitatTestingTests.User
    typealias Config = HabitatTestingTests.Config
}

/// The stack these tests share, like an app's global `AppEnvironment`.
let AppEnvironment = EnvironmentStack<TestingApp>(HabitatEnvironment(services: Services(label: "live"), config: Config()))

extension User {
    static let ada = User(id: 1, name: "Ada")
    static let grace = User(id: 2, name: "Grace")
}
