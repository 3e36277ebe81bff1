// What the Testing article assumes but doesn't show: a small profile feature. (Examples/
// ProfileFeature is the full one.) Scripts/check-docs.py compiles it with the article's blocks.
import Foundation
import Habitat

struct Member: Codable, Sendable, Equatable {
    var id: Int
    var name: String
    static let ada = Member(id: 1, name: "Ada")
}
struct Profile: Sendable { var memberID: Int; var bio: String }
struct ProfileAPI: Sendable {
    var signIn: @Sendable (_ email: String, _ password: String) async throws -> (Member, AuthToken)
    var fetchProfile: @Sendable (_ memberID: Int, _ token: AuthToken) async throws -> Profile
    var isReachable: @Sendable () -> Bool
}
struct AppServices: Sendable {
    var api: ProfileAPI
    static let unimplemented = AppServices(api: .unimplemented)
}
struct AppConfig: Codable, Sendable { static let `default` = AppConfig() }
enum MyApp: EnvironmentSchema {
    typealias Services = AppServices
    typealias User = Member
    typealias Config = AppConfig
}
let AppEnvironment = EnvironmentStack<MyApp>(HabitatEnvironment(services: .unimplemented, config: .default))

struct ProfileScreen: Sendable { var greeting: String }

struct ProfileModel {
    func signIn(email: String, password: String) async throws -> Member {
        let (member, token) = try await AppEnvironment.current.services.api.signIn(email, password)
        AppEnvironment.login(user: member, token: token)
        return member
    }

    func load() async throws -> ProfileScreen {
        let environment = AppEnvironment.current
        guard let session = environment.session else { throw CocoaError(.userCancelled) }
        _ = try await environment.services.api.fetchProfile(session.user.id, session.token)
        let hour = environment.calendar.component(.hour, from: environment.now())
        return ProfileScreen(greeting: "\(hour < 12 ? "Good morning" : "Hello"), \(session.user.name)")
    }
}
