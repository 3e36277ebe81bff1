// What the Getting started article assumes but doesn't show: the app's own types and values.
// Scripts/check-docs.py compiles it with the article's code blocks.
import Foundation
import Habitat

struct Account: Codable, Sendable { var id: Int; var displayName: String }
struct RemoteConfig: Codable, Sendable {
    var timeout = 30
    var features: Set<String> = []
    static let `default` = RemoteConfig()
}
struct APIClient: Sendable {
    var baseURL: String
    static let live = APIClient(baseURL: "https://api.example.com")
    static let mock = APIClient(baseURL: "http://localhost:8080")
}
struct Analytics: Sendable {
    func identify(_ user: Account?) {}
}
extension AppServices {
    static let live = AppServices(api: .live, analytics: Analytics())
}
let account = Account(id: 1, displayName: "Ada Lovelace")
let expiry = Date().addingTimeInterval(3600)
