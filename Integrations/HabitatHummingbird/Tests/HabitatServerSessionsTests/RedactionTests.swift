import Foundation
import HabitatPostgres
import HabitatServerSessions
import PostgresNIO
import Testing

/// No public value of the add-on prints a session ID whole, or a session's value (which may
/// hold upstream tokens): `print`, `debugPrint`, `dump`, `String(reflecting:)` and a `Mirror`
/// walk. A public type in neither list below fails the suite, so a new one can't slip past.
@Suite struct RedactionTests {
    static let secret = "upstream-refresh-9f2b-redaction-probe"

    /// Public types that hold no credential, with why.
    static let holdNoSecret: [String: String] = [
        "MemorySessionBackend": "stored sessions, behind a lock, with no mirror of their own (checked below)",
        "HabitatRequestMiddleware": "closures",
        "RequestBinding": "the request's environment, redacted by Habitat (its own tests)",
        "RequestID": "a random request identifier, not a credential",
        "Key": "a task-local's key",
        "LeaseClaim": "a lease's name and holder, not a credential",
        "LeaseTake": "whether a lease was taken, and a previous holder's name",
        "SessionChange": "a stored session's key (the ID's hash) and version",
    ]

    /// Public types checked below.
    static let checked: Set<String> = [
        "ServerSession", "StoredSession", "SessionBackendError", "CachedSessionBackend",
        "PostgresSessionBackend", "PostgresSessionChanges", "ServerSessions",
    ]

    /// The database's password is in the client's configuration: no printing path of the
    /// backend, the change feed or the sessions over them shows it (nor the user's name).
    @Test func aPostgreSQLBackendItsFeedAndTheSessionsOverThemPrintNoPassword() throws {
        let password = "pg-password-redaction-probe"
        let client = PostgresClient(configuration: try PostgresSessionBackend.configuration(url: "postgres://probe-user:\(password)@127.0.0.1:1/app"))
        let backend = PostgresSessionBackend(client: client)
        let values: [Any] = [backend, PostgresSessionChanges(client: client), ServerSessions<Visits>(backend: backend)]
        for value in values {
            var dumped = ""
            dump(value, to: &dumped)
            let mirrored = Mirror(reflecting: value).children.map { "\($0.label ?? ""): \($0.value)" }.joined(separator: ", ")
            for text in [dumped, "\(value)", String(reflecting: value), mirrored] {
                #expect(!text.contains(password), "\(type(of: value)) shows the password: \(text)")
            }
        }
    }

    @Test func everyPublicTypeIsCheckedOrSaysWhyItHoldsNoSecret() throws {
        let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Sources").standardized
        let declaration = try Regex(#"(?m)^\s*public (?:final )?(?:struct|class|enum|actor) ([A-Za-z_]+)"#)
        var found = Set<String>()
        let files = try #require(FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil))
        for case let file as URL in files where file.pathExtension == "swift" {
            for match in try String(contentsOf: file, encoding: .utf8).matches(of: declaration) {
                found.insert(String(try #require(match.output[1].substring)))
            }
        }
        #expect(found.count >= 8)
        let unlisted = found.subtracting(Self.checked).subtracting(Self.holdNoSecret.keys).sorted()
        #expect(unlisted.isEmpty, "public types neither checked for redaction nor said to hold no secret: \(unlisted)")
    }

    @Test func sessionsStoredSessionsAndErrorsPrintNoCredential() async throws {
        let backend = MemorySessionBackend()
        let sessions = ServerSessions<Upstreamed>(backend: backend)
        let session = try await sessions.create(Upstreamed(refreshToken: Self.secret))
        let stored = try #require(try await backend.get(id: StoredSession.key(for: session.id)))
        #expect(stored.data.range(of: Data(Self.secret.utf8)) != nil)
        let errors: [SessionBackendError] = [
            .versionConflict(id: session.id, expected: 1, current: 2), .duplicateID(session.id),
            .undecodable(id: session.id, reason: "bad"), .tooMuchContention(id: session.id, attempts: 3),
            .sessionGone(id: session.id), .unavailable("down"),
        ]
        for value in [session, stored, backend] + errors as [Any] {
            expectRedacted(value, secrets: [Self.secret, session.id])
        }
        // A cache holding a copy of the session.
        let cache = CachedSessionBackend(backend, changes: backend)
        try await following(cache) {
            _ = try await cache.get(id: StoredSession.key(for: session.id))
            _ = try await cache.get(id: StoredSession.key(for: session.id))
            #expect(cache.counts.hits == 1, "the copy is there")
            expectRedacted(cache, secrets: [Self.secret, session.id])
        }
    }

    /// Renders `value` every way a program prints one, and fails where a secret shows.
    func expectRedacted(_ value: Any, secrets: [String], sourceLocation: SourceLocation = #_sourceLocation) {
        var dumped = "", debugPrinted = "", printed = ""
        dump(value, to: &dumped, maxDepth: 12)
        debugPrint(value, to: &debugPrinted)
        print(value, to: &printed)
        for text in [printed, debugPrinted, dumped, String(reflecting: value), String(describing: value)] {
            for secret in secrets {
                #expect(!text.contains(secret), "shows a secret: \(text.prefix(400))", sourceLocation: sourceLocation)
            }
        }
        for secret in secrets {
            #expect(!mirrorHolds(secret, value, depth: 0), "a Mirror walk reaches a secret", sourceLocation: sourceLocation)
        }
    }

    func mirrorHolds(_ secret: String, _ value: Any, depth: Int) -> Bool {
        if let text = value as? String { return text.contains(secret) }
        if let data = value as? Data { return data.range(of: Data(secret.utf8)) != nil }
        guard depth < 12 else { return false }
        return Mirror(reflecting: value).children.contains { mirrorHolds(secret, $0.value, depth: depth + 1) }
    }
}

/// A session value holding an upstream refresh token, as a backend-for-frontend keeps one.
struct Upstreamed: Codable, Sendable {
    var refreshToken: String
}
