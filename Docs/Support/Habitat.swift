// What the landing page assumes but doesn't show. Scripts/check-docs.py compiles it with the
// page's code block.
import Habitat

struct Account: Codable, Sendable { var id: Int; var name: String }
struct RemoteConfig: Codable, Sendable { static let `default` = RemoteConfig() }
struct APIClient: Sendable { var baseURL = "https://api.example.com" }
struct AppServices: Sendable { var api = APIClient(); static let live = AppServices() }
enum MyApp: EnvironmentSchema {
    typealias Services = AppServices
    typealias User = Account
    typealias Config = RemoteConfig
}
let account = Account(id: 1, name: "Ada")
