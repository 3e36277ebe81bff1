import Foundation
import Habitat
import HabitatPersistence
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Two processes on one store of several accounts: an app and its extension, or two windows.
@Suite struct AccountProcessTests {
    /// ada active, grace signed in beside her, saved in `directory`.
    func twoAccounts(in directory: TemporaryDirectory) throws -> SessionStore<AccountsApp> {
        let sessions = try accountSessions(in: directory.url)
        let stack = makeAccountsStack()
        stack.login(user: .grace, token: memberToken(.grace, 1))
        stack.addAccount(user: .ada, token: memberToken(.ada, 2))
        try stack.save(to: sessions)
        return sessions
    }

    @Test(.enabled(if: canRunFixtures))
    func aSwitchInOneProcessReachesTheOthersStreamInOneStep() async throws {
        let directory = try TemporaryDirectory()
        let sessions = try twoAccounts(in: directory)
        let stack = makeAccountsStack()
        try stack.restore(from: sessions)
        stack.enableAutosave(to: sessions)
        let following = stack.followStore(sessions, checkingEvery: .milliseconds(20))
        defer { following.stop() }
        let changes = stack.changes

        let switcher = sessionWorker("accounts-switch-loop", directory.path)
        switcher.standardOutput = Pipe()
        try switcher.run()
        defer {
            _ = kill(switcher.processIdentifier, SIGKILL)
            switcher.waitUntilExit()
        }
        var switches = 0
        for await change in changes {
            #expect(change.kind == .storeChanged)
            for environment in [change.old, change.new] {
                for account in environment.accounts {
                    #expect(owner(of: account.token) == account.user.id, "\(account.user.id) holds \(account.token.secret)")
                }
                #expect(environment.services.member == environment.session?.user && environment.services.token == environment.session?.token)
            }
            if change.old.activeAccountID != change.new.activeAccountID {
                #expect(Set(change.new.accounts.map(\.user.id)) == ["ada", "grace"])
                switches += 1
            }
            if switches == 5 { break }
        }
        #expect(switches == 5)
    }

    @Test(.enabled(if: canRunFixtures))
    func aRefreshInOneProcessAndSwitchesInTheOtherNeverMix() async throws {
        let directory = try TemporaryDirectory()
        let sessions = try twoAccounts(in: directory)
        let refresher = sessionWorker("accounts-refresh-loop", directory.path, "grace", "100")
        let output = Pipe()
        refresher.standardOutput = output
        try refresher.run()

        let stack = makeAccountsStack()
        try stack.restore(from: sessions)
        stack.enableAutosave(to: sessions)
        let following = stack.followStore(sessions, checkingEvery: .milliseconds(10))
        for round in 0..<60 {
            try stack.switchAccount(to: round.isMultiple(of: 2) ? "grace" : "ada")
            await stack.flushAutosave()
            for account in stack.current.accounts {
                #expect(owner(of: account.token) == account.user.id, "round \(round): \(account.user.id) holds \(account.token.secret)")
            }
            try await Task.sleep(for: .milliseconds(5))
        }
        following.stop()
        _ = kill(refresher.processIdentifier, SIGKILL)
        refresher.waitUntilExit()
        let lines = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).split(separator: "\n")
        let refreshed = lines.compactMap { $0.hasPrefix("refreshed ") ? Int($0.dropFirst(10)) : nil }
        #expect(refreshed.count > 5, "the refresher ran: \(lines.suffix(3))")

        let snapshot = try #require(try sessions.load())
        let accounts = [snapshot.session].compactMap { $0 } + snapshot.otherAccounts
        #expect(Set(accounts.map(\.user.id)) == ["ada", "grace"], "neither process lost an account")
        for account in accounts {
            #expect(owner(of: account.token) == account.user.id, "\(account.user.id) holds \(account.token.secret)")
        }
        let grace = try #require(accounts.first { $0.user.id == "grace" })
        let serial = try #require(Int(grace.token.secret.split(separator: "#")[1]))
        #expect(serial >= refreshed.last ?? 0, "a saved refresh is never undone: grace#\(serial), last acknowledged \(refreshed.last ?? 0)")
        #expect(accounts.first { $0.user.id == "ada" }?.token == memberToken(.ada, 2), "ada's token was never touched")
    }

    @Test(.enabled(if: canRunFixtures))
    func twoProcessesRefreshingOneAccountAskTheServerOnce() async throws {
        try await offThePool {
            let directory = try TemporaryDirectory()
            let sessions = try accountSessions(in: directory.url)
            let stack = makeAccountsStack()
            stack.login(user: .ada, token: memberToken(.ada, 1))
            stack.addAccount(user: .grace, token: memberToken(.grace, 2))   // ada is not the active one
            try stack.save(to: sessions)

            let (tokens, refreshes) = try refreshTogether(in: directory, ["accounts-refresh-together", "accounts-refresh-together"])
            #expect(refreshes.count == 1, "one request to the server: \(refreshes)")
            #expect(Set(tokens).count == 1 && tokens.first?.hasPrefix("ada#") == true, "both use the token it got: \(tokens)")
            let snapshot = try #require(try sessions.load())
            #expect(snapshot.session?.user == .grace && snapshot.session?.token == memberToken(.grace, 2), "the active account untouched")
            #expect(snapshot.otherAccounts.first?.token.secret == tokens.first)
        }
    }

    @Test(.enabled(if: canRunFixtures))
    func refreshesOfDifferentAccountsInTwoProcessesDontWaitForEachOther() async throws {
        try await offThePool {
            let directory = try TemporaryDirectory()
            let sessions = try twoAccounts(in: directory)
            let log = directory.file("refreshes.log")
            _ = FileManager.default.createFile(atPath: log.path, contents: nil)
            let start = directory.file("start")
            let workers = ["ada", "grace"].map { sessionWorker("accounts-refresh-one", directory.path, log.path, start.path, $0) }
            let outputs = workers.map { worker in
                let output = Pipe()
                worker.standardOutput = output
                return output
            }
            for worker in workers { try worker.run() }
            // NB: both are up and waiting for the start (a fixed pause was too short for a worker
            // that started slowly under the thread sanitizer).
            for output in outputs { _ = output.fileHandleForReading.readData(ofLength: 6) }
            _ = FileManager.default.createFile(atPath: start.path, contents: nil)
            for worker in workers { worker.waitUntilExit() }
            #expect(workers.allSatisfy { $0.terminationStatus == 0 })
            let lines = try String(contentsOf: log, encoding: .utf8).split(separator: "\n").map(String.init)
            #expect(lines.count == 4)
            #expect(lines.prefix(2).allSatisfy { $0.hasPrefix("start ") }, "both refreshes ran at once: \(lines)")
            let snapshot = try #require(try sessions.load())
            for account in [snapshot.session].compactMap({ $0 }) + snapshot.otherAccounts {
                #expect(account.token.secret.hasPrefix("\(account.user.id)#") && account.token != memberToken(account.user, 1) && account.token != memberToken(account.user, 2))
            }
        }
    }
}
