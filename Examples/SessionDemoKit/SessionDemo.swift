// The logic of `habitat-demo`, a library so the tests can run it in-process as well as end to end.

public import Foundation
public import Habitat
public import HabitatPersistence

// MARK: The demo app's environment

/// The signed-in user of the demo app. `Identifiable` by name: each name is its own account.
public struct DemoUser: Codable, Sendable, Equatable, Identifiable {
    public var name: String
    public var id: String { name }
}

/// The demo app's configuration.
public struct DemoConfig: Codable, Sendable, Equatable {
    public var launches = 0
}

/// A pretend API: it "logs in" by making up a token, and signs requests with the session's.
public struct FakeAPI: Sendable {
    public var token: AuthToken?

    /// Asks the pretend server for a token for `name`.
    public func logIn(name: String, now: Date) -> AuthToken {
        let secret = "demo-" + (0..<16).map { _ in String(UInt8.random(in: 0...15), radix: 16) }.joined()
        return AuthToken(secret, expiresAt: now.addingTimeInterval(3600))
    }
}

public struct DemoServices: Sendable, SessionDependent {
    public var api = FakeAPI()
    public mutating func sessionChanged(to session: UserSession<DemoUser>?) { api.token = session?.token }
}

public enum DemoApp: EnvironmentSchema {
    public typealias Services = DemoServices
    public typealias User = DemoUser
    public typealias Config = DemoConfig
}

// MARK: The command line

/// `habitat-demo [--store DIR] login NAME [--token TOKEN] | status | accounts | switch NAME |
/// refresh | logout [NAME | --all]`; without a command, a walkthrough in a temporary directory.
public enum SessionDemo {
    /// What a run printed and how it ended.
    public struct Result: Sendable {
        public var status: Int32
        public var output: String
        public var errors: String

        public init(status: Int32, output: String, errors: String) {
            self.status = status
            self.output = output
            self.errors = errors
        }
    }

    public static let usage = "usage: habitat-demo [--store DIR] (login NAME [--token TOKEN] | status | accounts | switch NAME | refresh | logout [NAME | --all] | tour | help)"

    /// What `habitat-demo --help` prints: the commands, the options and where the session is
    /// kept by default.
    public static func help(environment: [String: String]) -> String {
        """
        habitat-demo: a signed-in session that survives restarts, kept with Habitat.

        \(usage)

        Commands:
          login NAME     sign NAME in (the pretend server hands out a token) beside any account
                         already signed in, make it the active one, and save the sessions
          status         say who is logged in, as restored at this launch
          accounts       list the signed-in accounts, the active one marked with *
          switch NAME    make the signed-in account NAME the active one
          refresh        ask the pretend server for a new token for the active account
          logout         sign the active account out and delete its token from disk; the
                         other accounts stay signed in (logout NAME: that account; --all: all)
          tour           tour the rest of the core API: push and pop, scopes, the change stream
          help           show this help (also --help, -h)
          (none)         walk through login, a second account, switch and logout in a
                         temporary directory

        Options:
          --store DIR    keep the session in DIR (session.json and secrets/)
                         default: \(defaultDirectory(environment).path)
          --token TOKEN  with login: use TOKEN instead of asking the pretend server

        """
    }

    /// Runs the demo with `arguments` (without the program name).
    /// - Parameters:
    ///   - arguments: The command line.
    ///   - environment: The process environment, for the default data directory.
    /// - Returns: The exit status and what was printed.
    public static func run(_ arguments: [String], environment: [String: String]) async -> Result {
        var result = Result(status: 0, output: "", errors: "")
        var rest = arguments
        var storeDirectory: URL?
        if rest.contains(where: { ["--help", "-h", "help"].contains($0) }) {
            return Result(status: 0, output: help(environment: environment), errors: "")
        }
        if let index = rest.firstIndex(of: "--store") {
            guard index + 1 < rest.count, !rest[index + 1].isEmpty else {
                return usageError("--store needs a directory (an empty one would mean the current directory)")
            }
            storeDirectory = URL(fileURLWithPath: rest[index + 1])
            rest.removeSubrange(index...index + 1)
        }
        guard let name = rest.first else {
            return await walkthrough(environment: environment)
        }
        if name == "tour" {
            // NB: the tour is async and uses globals of its own; it lives in the executable.
            return usageError("tour runs in the habitat-demo executable")
        }
        guard let command = Command(rawValue: name) else {
            return usageError("unknown command '\(name)'")
        }
        let directory = storeDirectory ?? defaultDirectory(environment)
        if command == .status, !FileManager.default.fileExists(atPath: directory.path) {
            // Looking doesn't create anything.
            result.output += "logged out (nothing saved in \(directory.path))\n"
            return result
        }
        do {
            let stack = EnvironmentStack<DemoApp>(HabitatEnvironment(services: DemoServices(), config: DemoConfig()))
            let sessions = try sessionStore(in: directory)
            // A damaged store must not stop the app: restoreAtLaunch sets a bad file aside and
            // says so, and the command goes on logged out.
            if let problem = stack.restoreAtLaunch(from: sessions).problem {
                result.errors += "habitat-demo: starting logged out: \(problem)\n"
            }
            switch command {
            case .login:
                var loginArguments = Array(rest.dropFirst())
                var token: AuthToken?
                if let index = loginArguments.firstIndex(of: "--token") {
                    guard index + 1 < loginArguments.count else { return usageError("--token needs a value") }
                    token = AuthToken(loginArguments[index + 1], expiresAt: stack.current.now().addingTimeInterval(3600))
                    loginArguments.removeSubrange(index...index + 1)
                }
                guard let name = loginArguments.first else { return usageError("login needs a NAME") }
                guard loginArguments.count == 1 else {
                    return usageError("login takes one NAME; unexpected '\(loginArguments[1])'")
                }
                let now = stack.current.now()
                // Beside the accounts already signed in: one person, several accounts.
                stack.addAccount(user: DemoUser(name: name), token: token ?? stack.current.services.api.logIn(name: name, now: now))
                stack.updateConfig { $0.launches += 1 }
                try stack.save(to: sessions)
                result.output += "logged in as \(name)\n" + alsoSignedIn(stack.current)
            case .status:
                guard rest.count == 1 else { return usageError("status takes no arguments; unexpected '\(rest[1])'") }
                if let session = stack.current.session {
                    let expired = session.isExpired(at: stack.current.now()) ? ", expired" : ""
                    result.output += "logged in as \(session.user.name) (\(session.state.rawValue)\(expired))\n"
                } else {
                    result.output += "logged out\n"
                }
                result.output += alsoSignedIn(stack.current)
            case .accounts:
                guard rest.count == 1 else { return usageError("accounts takes no arguments; unexpected '\(rest[1])'") }
                for account in stack.current.accounts {
                    let marker = account.user == stack.current.currentUser ? "*" : " "
                    result.output += "\(marker) \(account.user.name) (\(account.state.rawValue))\n"
                }
                if stack.current.accounts.isEmpty { result.output += "no account is signed in\n" }
            case .switch:
                guard rest.count == 2 else { return usageError("switch takes one NAME") }
                try stack.switchAccount(to: rest[1])
                try stack.save(to: sessions)
                result.output += "switched to \(rest[1])\n"
            case .refresh:
                guard rest.count == 1 else { return usageError("refresh takes no arguments; unexpected '\(rest[1])'") }
                // The pretend server rotates the token; concurrent refreshes would share this one.
                let api = stack.current.services.api
                let now = stack.current.now()
                let outcome = await stack.refreshSession { session in
                    .refreshed(token: api.logIn(name: session.user.name, now: now))
                }
                switch outcome {
                case .refreshed:
                    try stack.save(to: sessions)
                    result.output += "refreshed the session of \(stack.current.currentUser?.name ?? "?"): a new token, authenticated\n"
                case .notLoggedIn:
                    result.output += "logged out: nothing to refresh\n"
                case .awaitingToken, .waitingForRotation:
                    result.output += "the token can't be read right now: try again later\n"
                case .ended, .superseded, .endedUnconfirmed:
                    result.output += "the session ended\n"
                case .notSent, .refused:
                    result.output += "the server couldn't be asked: try again later\n"
                }
            case .logout:
                guard rest.count <= 2 else { return usageError("logout takes at most one NAME or --all; unexpected '\(rest[2])'") }
                switch rest.dropFirst().first {
                case nil: stack.logout()
                case "--all": stack.logoutAll()
                case let name?:
                    guard stack.logout(account: name) != nil else { return usageError("no signed-in account is named '\(name)'") }
                }
                try stack.save(to: sessions)
                result.output += (stack.current.session == nil ? "logged out\n" : "logged out \(rest[1])\n") + alsoSignedIn(stack.current)
            }
        } catch {
            result.status = 1
            result.errors += "habitat-demo: \(error)\n"
        }
        return result
    }

    private enum Command: String {
        case login, status, accounts, `switch`, refresh, logout
    }

    /// "also signed in: NAME, NAME" when other accounts are signed in beside the active one.
    private static func alsoSignedIn(_ environment: HabitatEnvironment<DemoApp>) -> String {
        let others = environment.otherAccounts.map(\.user.name)
        return others.isEmpty ? "" : "also signed in: \(others.joined(separator: ", ")) (switch NAME to use one)\n"
    }

    /// The session store the demo keeps in `directory`: `session.json` and `secrets/`.
    public static func sessionStore(in directory: URL) throws(StoreError) -> SessionStore<DemoApp> {
        SessionStore(
            store: try JSONFileStore(url: directory.appendingPathComponent("session.json")),
            secrets: try FileSecretStore(directory: directory.appendingPathComponent("secrets"))
        )
    }

    /// The per-user data directory: `$XDG_DATA_HOME/habitat-demo` or
    /// `~/.local/share/habitat-demo` on Linux, Application Support on Apple platforms.
    public static func defaultDirectory(_ environment: [String: String]) -> URL {
        #if canImport(Darwin)
        let base = FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask)[0]
        #else
        let base: URL
        if let xdg = environment["XDG_DATA_HOME"], !xdg.isEmpty {
            base = URL(fileURLWithPath: xdg)
        } else {
            let home = environment["HOME"] ?? NSHomeDirectory()
            base = URL(fileURLWithPath: home).appendingPathComponent(".local/share")
        }
        #endif
        return base.appendingPathComponent("habitat-demo")
    }

    private static func usageError(_ reason: String) -> Result {
        Result(status: 2, output: "", errors: "habitat-demo: \(reason)\n\(usage)\nRun 'habitat-demo --help' for more.\n")
    }

    /// login, status, logout and status again, each as a fresh launch, in a temporary store.
    private static func walkthrough(environment: [String: String]) async -> Result {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("habitat-demo-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        var result = Result(status: 0, output: "A walkthrough in \(directory.path); each step is a fresh launch.\n", errors: "")
        for step in [["login", "Ada"], ["status"], ["login", "Grace"], ["switch", "Ada"], ["accounts"], ["logout"], ["status"], ["logout", "--all"], ["status"]] {
            let run = await run(["--store", directory.path] + step, environment: environment)
            result.output += "$ habitat-demo --store DIR \(step.joined(separator: " "))\n" + run.output
            result.errors += run.errors
            if run.status != 0 { result.status = run.status; break }
        }
        result.output += "\nTry it yourself: swift run habitat-demo login NAME, then status, accounts, switch NAME, logout.\n"
        return result
    }
}
