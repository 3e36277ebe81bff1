import Foundation
import Habitat
import HabitatPersistence

// The app these scenarios describe: an API client that signs its requests with the session's
// token, an analytics client that tags events with the signed-in member, a cache that a logout
// empties, and a remote configuration. Written for these tests, in the shape the systems Habitat
// replaces give their apps (see ../shared/seeds: an environment struct with a push/pop stack, a
// login framework with a secure store, a context per user, a session manager that tells
// observers, an app manager keeping a token apart from the user's details).

struct Member: Codable, Sendable, Equatable, Identifiable {
    var id: Int
    var name: String
    var email: String?
}

struct RemoteConfig: Codable, Sendable, Equatable, DefaultConfig {
    var features: [String] = []
    var locale = "en"
}

/// A request the API client would send: the path, and the bearer token it carries.
struct SentRequest: Sendable, Equatable {
    var path: String
    var bearer: String?
}

/// An API client that records what it sends, signing each request with the token it was given.
struct APIService: Sendable {
    var token: AuthToken?
    var sent: RequestLog
    var fetchProjects: @Sendable () -> [String] = { ["live projects"] }

    func send(_ path: String) { sent.append(SentRequest(path: path, bearer: token?.secret)) }
}

/// Where the API client's requests land, for a test to read.
final class RequestLog: Sendable {
    private let requests = LockedLog<SentRequest>()
    func append(_ request: SentRequest) { requests.append(request) }
    var all: [SentRequest] { requests.all }
}

/// A list behind a lock: the tests' shared recorders.
final class LockedLog<Element: Sendable>: Sendable {
    private let box = LockedBox<[Element]>([])
    func append(_ element: Element) { box.withLock { $0.append(element) } }
    var all: [Element] { box.withLock { $0 } }
}

/// A cache that a logout replaces with an empty one.
struct Cache: Sendable {
    var entries: [String: String] = [:]
}

/// Analytics: every event tagged with the signed-in member, if any.
struct Analytics: Sendable {
    var memberID: Int?
    var events: LockedLog<String>
    func track(_ event: String) { events.append("\(event) member=\(memberID.map(String.init) ?? "none")") }
}

struct AppServices: Sendable, SessionDependent {
    var api: APIService
    var analytics: Analytics
    var cache = Cache()

    /// A login hands the API client its token and analytics the member; a logout takes both
    /// away and empties the cache, in the same step.
    mutating func sessionChanged(to session: UserSession<Member>?) {
        api.token = session?.token
        analytics.memberID = session?.user.id
        if session == nil { cache = Cache() }
    }

    /// Services whose requests go to logs of the test's own.
    static func recording() -> AppServices {
        AppServices(api: APIService(token: nil, sent: RequestLog()), analytics: Analytics(memberID: nil, events: LockedLog()))
    }
}

enum AppSchema: EnvironmentSchema {
    typealias Services = AppServices
    typealias User = Member
    typealias Config = RemoteConfig
}

extension Member {
    static let ada = Member(id: 1, name: "Ada", email: "ada@example.com")
    static let grace = Member(id: 2, name: "Grace")
}

/// A directory of the test's own, removed when `body` returns.
func withTemporaryDirectory<T>(_ body: (URL) throws -> T) throws -> T {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("habitat-seeds-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    defer { try? FileManager.default.removeItem(at: directory) }
    return try body(directory)
}

/// The app's durable stores in `directory`: the session's plain part in a JSON file, its
/// secrets in owner-only files of their own.
func appStores(in directory: URL) throws -> (sessions: SessionStore<AppSchema>, plain: JSONFileStore, secrets: FileSecretStore) {
    let plain = try JSONFileStore(url: directory.appendingPathComponent("session.json"))
    let secrets = try FileSecretStore(directory: directory.appendingPathComponent("secrets"))
    return (SessionStore(store: plain, secrets: secrets), plain, secrets)
}

/// Every byte the app's plain store holds, as text.
func plainText(of directory: URL) -> String {
    (try? String(contentsOf: directory.appendingPathComponent("session.json"), encoding: .utf8)) ?? ""
}
