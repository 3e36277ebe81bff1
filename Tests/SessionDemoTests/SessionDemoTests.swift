import Foundation
import SessionDemoKit
import Testing

/// `habitat-demo`, end to end: each command a fresh process (or a fresh in-process run), the
/// session surviving between them through the files in `--store`.
@Suite struct SessionDemoTests {
    final class Directory: Sendable {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("habitat-demo-tests-\(UUID().uuidString)")
        var path: String { url.path }
        deinit { try? FileManager.default.removeItem(at: url) }

        func filesContaining(_ needle: String) -> [String] {
            guard let enumerator = FileManager.default.enumerator(at: url, includingPropertiesForKeys: nil) else { return [] }
            return enumerator.compactMap { item in
                guard let file = item as? URL, let data = try? Data(contentsOf: file) else { return nil }
                return data.range(of: Data(needle.utf8)) != nil ? file.lastPathComponent : nil
            }
        }
    }

    var binary: URL {
        #if os(macOS)
        for bundle in Bundle.allBundles where bundle.bundlePath.hasSuffix(".xctest") {
            return bundle.bundleURL.deletingLastPathComponent().appendingPathComponent("habitat-demo")
        }
        #endif
        return Bundle.main.bundleURL.appendingPathComponent("habitat-demo")
    }

    /// Runs the real executable.
    func launch(_ arguments: [String], environment: [String: String]? = nil) throws -> SessionDemo.Result {
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        if let environment { process.environment = environment }
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let out = output.fileHandleForReading.readDataToEndOfFile()
        let err = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return SessionDemo.Result(
            status: process.terminationStatus,
            output: String(decoding: out, as: UTF8.self),
            errors: String(decoding: err, as: UTF8.self)
        )
    }

    @Test func loginStatusLogoutAcrossLaunches() async throws {
        let store = Directory()
        let token = "tok-e2e-4f1c-SECRET"

        let login = try launch(["--store", store.path, "login", "Ada", "--token", token])
        #expect(login.status == 0)
        #expect(login.output == "logged in as Ada\n")
        #expect(store.filesContaining(token) == ["habitat.session.token.Ada"], "only the account's secret file holds the token")

        let status = try launch(["--store", store.path, "status"])
        #expect(status.output == "logged in as Ada (restored)\n")

        let logout = try launch(["--store", store.path, "logout"])
        #expect(logout.status == 0)
        #expect(logout.output == "logged out\n")
        #expect(store.filesContaining(token).isEmpty, "no file holds the token after logout")

        #expect(try launch(["--store", store.path, "status"]).output == "logged out\n")
    }

    @Test func aSecondAccountSignsInBesideTheFirstAndSwitchesAcrossLaunches() async throws {
        let store = Directory()
        #expect(try launch(["--store", store.path, "login", "Ada", "--token", "tok-ada-SECRET"]).status == 0)
        let second = try launch(["--store", store.path, "login", "Grace", "--token", "tok-grace-SECRET"])
        #expect(second.output == "logged in as Grace\nalso signed in: Ada (switch NAME to use one)\n")
        #expect(store.filesContaining("tok-ada-SECRET") == ["habitat.session.token.Ada"], "each account's token in its own item")
        #expect(store.filesContaining("tok-grace-SECRET") == ["habitat.session.token.Grace"])

        #expect(try launch(["--store", store.path, "accounts"]).output == "* Grace (restored)\n  Ada (restored)\n")
        #expect(try launch(["--store", store.path, "switch", "Ada"]).output == "switched to Ada\n")
        #expect(try launch(["--store", store.path, "status"]).output == "logged in as Ada (restored)\nalso signed in: Grace (switch NAME to use one)\n")
        #expect(store.filesContaining("tok-ada-SECRET") == ["habitat.session.token.Ada"], "a switch moves no token")

        let unknown = try launch(["--store", store.path, "switch", "Alan"])
        #expect(unknown.status == 1)
        #expect(unknown.errors == "habitat-demo: switchAccount: no signed-in account is named \"Alan\"\n")

        #expect(try launch(["--store", store.path, "logout", "Grace"]).output == "logged out Grace\n")
        #expect(store.filesContaining("tok-grace-SECRET").isEmpty, "Grace's token is gone, and only hers")
        #expect(try launch(["--store", store.path, "status"]).output == "logged in as Ada (restored)\n")
        #expect(try launch(["--store", store.path, "logout", "--all"]).output == "logged out\n")
        #expect(store.filesContaining("tok-").isEmpty)
        #expect(try launch(["--store", store.path, "accounts"]).output == "no account is signed in\n")
    }

    @Test func loginWithoutATokenGetsOneFromTheFakeAPI() async throws {
        let store = Directory()
        #expect(await SessionDemo.run(["--store", store.path, "login", "Grace"], environment: [:]).output == "logged in as Grace\n")
        let secrets = try FileManager.default.contentsOfDirectory(atPath: store.url.appendingPathComponent("secrets").path)
        #expect(secrets.filter { $0 != ".lock" }.sorted() == ["habitat.session.token", "habitat.session.token.Grace"], "the index and Grace's item")
        #expect(await SessionDemo.run(["--store", store.path, "status"], environment: [:]).output == "logged in as Grace (restored)\n")
    }

    /// A damaged store doesn't stop the app: the launch sets the file aside, says so in one
    /// line, and the command runs logged out; the next login writes a good file.
    @Test func aCorruptStoreIsSetAsideAndTheAppKeepsRunning() async throws {
        let store = Directory()
        #expect(await SessionDemo.run(["--store", store.path, "login", "Ada"], environment: [:]).status == 0)
        let file = store.url.appendingPathComponent("session.json")
        try Data("{ not json".utf8).write(to: file)

        let result = try launch(["--store", store.path, "status"])
        #expect(result.status == 0)
        #expect(result.output == "logged out\n")
        let lines = result.errors.split(separator: "\n")
        #expect(lines.count == 1)
        #expect(result.errors.hasPrefix("habitat-demo: starting logged out: "))
        #expect(result.errors.contains(file.path))
        let kept = try FileManager.default.contentsOfDirectory(atPath: store.path).filter { $0.hasPrefix("session.json.corrupt-") }
        #expect(kept.count == 1)
        #expect(result.errors.contains(kept.first ?? "?"), "the message says where the bad copy is")
        #expect(try Data(contentsOf: store.url.appendingPathComponent(kept[0])) == Data("{ not json".utf8))

        #expect(try launch(["--store", store.path, "login", "Grace"]).status == 0)
        let after = try launch(["--store", store.path, "status"])
        #expect(after.output == "logged in as Grace (restored)\n")
        #expect(after.errors.isEmpty)
    }

    /// Looking at a store that isn't there creates nothing.
    @Test func statusOnAFreshPathCreatesNothing() async throws {
        let store = Directory()
        let result = try launch(["--store", store.path, "status"])
        #expect(result.status == 0)
        #expect(result.output == "logged out (nothing saved in \(store.path))\n")
        #expect(!FileManager.default.fileExists(atPath: store.path))
    }

    /// A store that can't be made says which directory and the system's reason.
    @Test func aStoreThatCantBeCreatedSaysWhy() async throws {
        let store = Directory()
        try FileManager.default.createDirectory(at: store.url, withIntermediateDirectories: true)
        let file = store.url.appendingPathComponent("a-file")
        try Data("x".utf8).write(to: file)
        let result = try launch(["--store", file.appendingPathComponent("sub").path, "login", "Ada"])
        #expect(result.status == 1)
        #expect(result.errors.contains(file.appendingPathComponent("sub").path))
        #expect(result.errors.contains("Not a directory"))
        #expect(!result.errors.contains("could not be completed"))
    }

    /// A damaged token file is not a silent logout: the launch says so, and the file is kept.
    @Test func aCorruptTokenFileIsReportedAndKept() async throws {
        let store = Directory()
        #expect(await SessionDemo.run(["--store", store.path, "login", "Ada"], environment: [:]).status == 0)
        let token = store.url.appendingPathComponent("secrets/habitat.session.token.Ada")
        try Data("garbage\u{1}".utf8).write(to: token)

        let result = try launch(["--store", store.path, "status"])
        #expect(result.output == "logged out\n")
        #expect(result.errors.hasPrefix("habitat-demo: starting logged out: "))
        #expect(result.errors.contains("habitat.session.token"))
        #expect(result.errors.contains("not a token record"))
        #expect(try Data(contentsOf: token) == Data("garbage\u{1}".utf8), "nothing deleted without saying so")
    }

    /// `refresh` rotates the saved session's token: the old one is gone from disk, the user
    /// stays logged in.
    @Test func refreshRotatesTheToken() async throws {
        let store = Directory()
        let token = "tok-before-refresh-SECRET"
        #expect(try launch(["--store", store.path, "login", "Ada", "--token", token]).status == 0)
        let refresh = try launch(["--store", store.path, "refresh"])
        #expect(refresh.status == 0, "\(refresh.errors)")
        #expect(refresh.output == "refreshed the session of Ada: a new token, authenticated\n")
        #expect(store.filesContaining(token).isEmpty, "the old token is gone")
        #expect(store.filesContaining("demo-") == ["habitat.session.token.Ada"], "the new one is saved")
        #expect(try launch(["--store", store.path, "status"]).output == "logged in as Ada (restored)\n")

        #expect(try launch(["--store", store.path, "logout"]).status == 0)
        #expect(try launch(["--store", store.path, "refresh"]).output == "logged out: nothing to refresh\n")
    }

    @Test func theDefaultDirectoryFollowsXDG() async throws {
        let home = Directory()
        let xdg = Directory()
        #expect(SessionDemo.defaultDirectory(["XDG_DATA_HOME": xdg.path, "HOME": home.path]).path
            == xdg.url.appendingPathComponent("habitat-demo").path)
        #if !canImport(Darwin)
        #expect(SessionDemo.defaultDirectory(["HOME": home.path]).path
            == home.url.appendingPathComponent(".local/share/habitat-demo").path)
        let result = try launch(["login", "Ada"], environment: ["HOME": home.path, "PATH": "/usr/bin:/bin"])
        #expect(result.output == "logged in as Ada\n")
        #expect(FileManager.default.fileExists(atPath: home.url.appendingPathComponent(".local/share/habitat-demo/session.json").path))
        #endif
    }

    @Test func theWalkthroughRunsAllThreeCommands() async throws {
        let result = try launch([])
        #expect(result.status == 0)
        #expect(result.output.contains("logged in as Ada\n"))
        #expect(result.output.contains("logged in as Ada (restored)\n"))
        #expect(result.output.contains("logged out\n"))
    }

    @Test(arguments: [
        (["login"], "login needs a NAME"),
        (["frobnicate"], "unknown command 'frobnicate'"),
        (["--store"], "--store needs a directory (an empty one would mean the current directory)"),
        (["--store", "", "status"], "--store needs a directory (an empty one would mean the current directory)"),
        (["status", "extra"], "status takes no arguments; unexpected 'extra'"),
        (["login", "Ada", "--token"], "--token needs a value"),
        (["login", "Ada", "Lovelace"], "login takes one NAME; unexpected 'Lovelace'"),
    ])
    func badArgumentsSayWhatIsWrongThenTheUsage(_ arguments: [String], reason: String) async {
        let result = await SessionDemo.run(arguments, environment: ["HOME": "/nonexistent"])
        #expect(result.status == 2)
        #expect(result.output.isEmpty)
        #expect(result.errors == "habitat-demo: \(reason)\n\(SessionDemo.usage)\nRun 'habitat-demo --help' for more.\n")
    }

    @Test(arguments: [["--help"], ["-h"], ["help"], ["--store", "/tmp/x", "--help"]])
    func helpGoesToStandardOutputAndSucceeds(_ arguments: [String]) async throws {
        let result = try launch(arguments, environment: ["HOME": "/home/ada"])
        #expect(result.status == 0)
        #expect(result.errors.isEmpty)
        #expect(result.output.contains(SessionDemo.usage))
        #if canImport(Darwin)
        #expect(result.output.contains("default: "), "the default store location is said")
        #else
        #expect(result.output.contains("default: /home/ada/.local/share/habitat-demo"), "the default store location is said")
        #endif
    }

    /// `habitat-demo tour` walks through the rest of the core API and ends with the change
    /// stream's record of every step.
    @Test func theTourRunsToTheEnd() async throws {
        let result = try launch(["tour"])
        #expect(result.status == 0, "\(result.errors)")
        #expect(result.output.contains("mocked:    api=mock"))
        #expect(result.output.contains("pop base:  refused, the base stays"))
        #expect(result.output.contains("in scope:  api=live, user=nobody, locale=fr_FR"))
        let changes = result.output.split(separator: "\n").filter { $0.hasPrefix("  #") }
        #expect(changes.count == 8, "the change stream saw every step: \(result.output)")
    }

    @Test func theTourIsOnlyInTheExecutable() async {
        let result = await SessionDemo.run(["tour"], environment: [:])
        #expect(result.status == 2)
        #expect(result.errors.hasPrefix("habitat-demo: tour runs in the habitat-demo executable\n"))
    }
}
