import Foundation
import Habitat
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
        fetchUser: HabitatTesting.unimplemented("APIClient.fetchUser"),
        fetchUserSync: HabitatTesting.unimplemented("APIClient.fetchUserSync"),
        ping: HabitatTesting.unimplemented("APIClient.ping", placeholder: false),
        count: HabitatTesting.unimplemented("APIClient.count", placeholder: -1),
        track: HabitatTesting.unimplemented("APIClient.track"),
        trackAsync: HabitatTesting.unimplemented("APIClient.trackAsync")
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
let AppEnvironment = EnvironmentStack<TestingApp>(Environment(services: Services(label: "live"), config: Config()))

extension User {
    static let ada = User(id: 1, name: "Ada")
    static let grace = User(id: 2, name: "Grace")
}
