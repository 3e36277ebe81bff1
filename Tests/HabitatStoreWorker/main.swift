// A child process for the persistence tests: it writes stores in a loop so a test can kill it
// at random moments, or write keys while another process does the same.
//
//     habitat-store-worker save-loop DIR FIRST-ROUND
//     habitat-store-worker write-keys FILE PREFIX COUNT

import Foundation
import Habitat

// The same shapes as the tests' fixtures, so the tests can decode what this writes.
struct TestUser: Codable, Sendable { var id: Int; var name: String }
struct TestConfig: Codable, Sendable { var timeout: Int; var features: Set<String> }
struct NoServices: Sendable {}
enum WorkerApp: EnvironmentSchema {
    typealias Services = NoServices
    typealias User = TestUser
    typealias Config = TestConfig
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("habitat-store-worker: \(message)\n".utf8))
    exit(2)
}

let arguments = Array(CommandLine.arguments.dropFirst())
do {
    switch arguments.first {
    case "save-loop":
        // Round N logs in user N with token "token-N" (every seventh round logs out instead),
        // with a config whose timeout is N, and prints "saved N" once the save returned: a save
        // the parent has seen acknowledged must survive a kill.
        guard arguments.count == 3, let first = Int(arguments[2]) else { fail("usage: save-loop DIR FIRST-ROUND") }
        let directory = URL(fileURLWithPath: arguments[1])
        let sessions = SessionStore<WorkerApp>(
            store: try JSONFileStore(url: directory.appendingPathComponent("session.json")),
            secrets: try FileSecretStore(directory: directory.appendingPathComponent("secrets"))
        )
        // A config big enough that each write takes a while, so kills land mid-write.
        let features = Set((0..<400).map { "feature-\($0)-\(String(repeating: "x", count: 40))" })
        var round = first
        while true {
            let session = round % 7 == 0
                ? nil
                : UserSession(user: TestUser(id: round, name: "user \(round)"), token: AuthToken("token-\(round)"))
            let env = HabitatEnvironment<WorkerApp>(
                services: NoServices(),
                config: TestConfig(timeout: round, features: features),
                session: session
            )
            try sessions.save(env)
            FileHandle.standardOutput.write(Data("saved \(round)\n".utf8))
            round += 1
        }
    case "write-keys":
        guard arguments.count == 4, let count = Int(arguments[3]) else { fail("usage: write-keys FILE PREFIX COUNT") }
        let store = try JSONFileStore(url: URL(fileURLWithPath: arguments[1]))
        for index in 0..<count {
            try store.setData(Data("\(index)".utf8), forKey: "\(arguments[2])-\(index)")
        }
    default:
        fail("unknown command \(arguments.first ?? "(none)")")
    }
} catch {
    fail("\(error)")
}
