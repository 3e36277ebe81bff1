// habitat-server [--port N] [--backend memory|postgres] [--database postgres://USER@HOST:PORT/DB]
//                [--upstream URL] [--refresh-lease SECONDS] [--session-cache]
//                [--load-test [--variant floor|tasklocal|swift-dependencies|habitat|habitat-bound|habitat-sessions]]
//
// Serves the example app on 127.0.0.1 (port 8080 by default). `--load-test` (loopback only)
// adds the load test's route `GET /load/me` and the bearer tokens `tok-<id>-<secret>` for
// the load test's 1,000 members (ids 1,000,001 on, apart from the real members'), the secret taken from HABITAT_LOAD_TEST_SECRET (32 characters or more:
// `load.sh` makes a random one per run); `--variant` picks how that route passes per-request
// values. The app's own routes always use Habitat, and its members sign in with passwords.
// `--backend postgres` keeps the members' sessions in the database `--database` names (or
// HABITAT_POSTGRES_URL), so several instances started with it serve one fleet; with
// `--session-cache`, each keeps the sessions it serves, kept coherent by the database's feed.
import Foundation
import Hummingbird
import ServerApp

let arguments = CommandLine.arguments.dropFirst()
func value(of option: String) -> String? {
    arguments.firstIndex(of: option).flatMap { arguments.index(after: $0) < arguments.endIndex ? arguments[arguments.index(after: $0)] : nil }
}
func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("habitat-server: \(message)\n".utf8))
    exit(2)
}
guard let variant = Variant(rawValue: value(of: "--variant") ?? "habitat") else {
    fail("--variant is one of \(Variant.allCases.map(\.rawValue).joined(separator: ", "))")
}
let loadTestSecret: String?
if arguments.contains("--load-test") {
    guard let secret = ProcessInfo.processInfo.environment["HABITAT_LOAD_TEST_SECRET"] else {
        fail("--load-test needs HABITAT_LOAD_TEST_SECRET, \(loadTestSecretMinimumLength) random characters or more")
    }
    if let problem = loadTestSecretProblem(secret) { fail("--load-test: \(problem)") }
    loadTestSecret = secret
} else if value(of: "--variant") != nil {
    fail("--variant picks the load test's variant: it needs --load-test")
} else {
    loadTestSecret = nil
}
let port = value(of: "--port").flatMap(Int.init) ?? 8080
let backend: BackendChoice
switch value(of: "--backend") ?? "memory" {
case "memory": backend = .memory
case "postgres":
    guard let url = value(of: "--database") ?? ProcessInfo.processInfo.environment["HABITAT_POSTGRES_URL"] else {
        fail("--backend postgres needs --database postgres://USER@HOST:PORT/DB (or HABITAT_POSTGRES_URL)")
    }
    backend = .postgres(url: url)
case let other: fail("--backend is memory or postgres, not \(other)")
}
let upstream = value(of: "--upstream").map { text -> URL in
    guard let url = URL(string: text) else { fail("--upstream is a URL, not \(text)") }
    return url
}
let sessionCache = arguments.contains("--session-cache")
if sessionCache, backend == .memory { fail("--session-cache caches a database's sessions: it needs --backend postgres") }
let lease = Duration.seconds(value(of: "--refresh-lease").flatMap(Double.init) ?? 15)
do {
    try await buildApplication(
        variant: variant, loadTestSecret: loadTestSecret, port: port, backend: backend, upstream: upstream, refreshLease: lease,
        sessionCache: sessionCache
    ).runService()
} catch let error as ServerSetupError {
    fail(error.description)
}
