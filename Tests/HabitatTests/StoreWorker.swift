// A child process for the persistence tests: it writes stores in a loop so a test can kill it
// at random moments, or write keys while another process does the same.
//
// The child is this test bundle run again (it is an executable on Linux) with only the
// `storeWorker` fixture selected and the work named in HABITAT_STORE_WORKER:
//
//     save-loop DIR FIRST-ROUND
//     write-keys FILE PREFIX COUNT
//
// (A separate executable target would show up as one more executable product of the package.)

import Foundation
import Habitat
import HabitatPersistence
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Whether this platform can run a fixture of this bundle in a child process.
let canRunFixtures: Bool = {
    #if os(Linux)
    return true
    #else
    return false
    #endif
}()

/// A child process that runs the fixture test `fixture` of this test bundle, with `environment`
/// added to this process's environment. Swift Testing reports to standard error, so what the
/// fixture prints to standard output is all the child's standard output holds.
func fixtureProcess(_ fixture: String, environment: [String: String]) -> Process {
    let process = Process()
    process.executableURL = Bundle.main.executableURL
    process.arguments = ["--testing-library", "swift-testing", "--filter", fixture]
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    process.standardError = FileHandle.nullDevice
    return process
}

/// Starts `process`, waits for its first byte of output (its first acknowledged write), lets it
/// run `microseconds` more, kills it with SIGKILL and waits for it: what the crash harnesses do
/// each round. Returns everything it printed.
func killAfterFirstOutput(_ process: Process, plus microseconds: UInt32) throws -> String {
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    let firstByte = output.fileHandleForReading.readData(ofLength: 1)
    usleep(microseconds)
    _ = kill(process.processIdentifier, SIGKILL)
    process.waitUntilExit()
    return String(decoding: firstByte + output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
}

/// A store worker: `fixtureProcess("storeWorker", …)` with its arguments.
func storeWorker(_ arguments: String...) -> Process {
    fixtureProcess("storeWorker", environment: ["HABITAT_STORE_WORKER": arguments.joined(separator: "\n")])
}

@Suite struct StoreWorkerFixture {
    /// Not a test of its own: the body of a store worker, when a test runs one.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["HABITAT_STORE_WORKER"] != nil))
    func storeWorker() throws {
        let arguments = ProcessInfo.processInfo.environment["HABITAT_STORE_WORKER", default: ""]
            .split(separator: "\n").map(String.init)
        switch arguments.first {
        case "save-loop":
            let first = try #require(arguments.count == 3 ? Int(arguments[2]) : nil, "save-loop DIR FIRST-ROUND")
            try saveLoop(in: URL(fileURLWithPath: arguments[1]), from: first)
        case "write-keys":
            let count = try #require(arguments.count == 4 ? Int(arguments[3]) : nil, "write-keys FILE PREFIX COUNT")
            let store = try JSONFileStore(url: URL(fileURLWithPath: arguments[1]))
            for index in 0..<count {
                try store.setData(Data("\(index)".utf8), forKey: "\(arguments[2])-\(index)")
            }
        default:
            Issue.record("unknown store worker command: \(arguments)")
        }
    }

    /// Round N logs in user N with token "token-N" (every seventh round logs out instead), with
    /// a config whose timeout is N, and prints "saved N" once the save returned: a save the
    /// parent has seen acknowledged must survive a kill. Runs until it is killed.
    private func saveLoop(in directory: URL, from first: Int) throws -> Never {
        let sessions = SessionStore<TestApp>(
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
            var environment = makeEnvironment()
            environment.config = TestConfig(timeout: round, features: features)
            environment.session = session
            try sessions.save(environment)
            FileHandle.standardOutput.write(Data("saved \(round)\n".utf8))
            round += 1
        }
    }
}
