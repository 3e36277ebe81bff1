import Foundation
import HabitatServerSessions
import Testing

/// Limits that hold under concurrency and across instances (sign-in attempts per name, sessions
/// per member), on every available backend; on PostgreSQL, between two clients of one database
/// too, as two server instances are.
@Suite struct BackendLimitTests {
    @Test(arguments: Backend.available)
    func fortyConcurrentAttemptsRecordExactlyTheLimit(_ backend: Backend) async throws {
        try await backend.with { backend in
            let key = "signin:" + UUID().uuidString
            let recorded = await withTaskGroup(of: Bool.self) { group in
                for _ in 0..<40 {
                    group.addTask { (try? await backend.recordAttempt(key, limit: 5, within: .seconds(60))) ?? false }
                }
                return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(recorded == 5)
            #expect(try await backend.recordAttempt(key, limit: 5, within: .seconds(60)) == false)
            try await backend.forgetAttempts(key)
            #expect(try await backend.recordAttempt(key, limit: 5, within: .seconds(60)), "a success forgets them")
        }
    }

    @Test(arguments: Backend.available)
    func attemptsOlderThanTheWindowCountNoMore(_ backend: Backend) async throws {
        try await backend.with { backend in
            let key = "signin:" + UUID().uuidString
            let window = Duration.seconds(2)
            let start = ContinuousClock.now
            #expect(try await backend.recordAttempt(key, limit: 2, within: window))
            #expect(try await backend.recordAttempt(key, limit: 2, within: window))
            let recorded = ContinuousClock.now   // both attempts are recorded by now
            let third = try await backend.recordAttempt(key, limit: 2, within: window)
            // NB: judged only while the window lasts: a loaded machine may take longer.
            if ContinuousClock.now - start < window { #expect(!third) }
            try await Task.sleep(until: recorded + window + .milliseconds(300))
            #expect(try await backend.recordAttempt(key, limit: 2, within: window))
        }
    }

    @Test(arguments: Backend.available)
    func anOwnersSessionsPastTheCapAreTheOldest(_ backend: Backend) async throws {
        try await backend.with { backend in
            let owner = "member-" + UUID().uuidString
            let ids = (0..<12).map { "\(owner)-session-\($0)" }
            var ended: [String] = []
            for id in ids {
                // NB: real sessions: a purge (another test's, on the shared database) forgets
                // the records of sessions that are gone.
                _ = try await backend.create(id: id, data: Data(), expiresIn: .seconds(60))
                ended += try await backend.recordSession(id, owner: owner, limit: 10)
            }
            #expect(ended == Array(ids.prefix(2)))
            #expect(try await backend.recordSession(ids[11], owner: owner, limit: 10).isEmpty, "recording one again counts it once")
            // A session removed (signed out) is counted no more: room for one more.
            try await backend.remove(id: ids[5])
            _ = try await backend.create(id: "\(owner)-later", data: Data(), expiresIn: .seconds(60))
            #expect(try await backend.recordSession("\(owner)-later", owner: owner, limit: 10).isEmpty)
        }
    }

    /// Two instances, one database: their attempts and their members' sessions are counted
    /// together (before, each instance counted its own: 12 tries a minute on two, and 30 of a
    /// member's 36 sessions live after a restart).
    @Test(arguments: Backend.available.filter { $0 == .postgres })
    func twoInstancesOfOneDatabaseShareTheLimits(_ backend: Backend) async throws {
        try await backend.with { first in
            try await backend.with { second in
                let key = "signin:" + UUID().uuidString
                var recorded = 0
                for round in 0..<12 where try await (round.isMultiple(of: 2) ? first : second).recordAttempt(key, limit: 5, within: .seconds(60)) {
                    recorded += 1
                }
                #expect(recorded == 5)
                let owner = "member-" + UUID().uuidString
                var ended: [String] = []
                for index in 0..<36 {
                    let instance = index.isMultiple(of: 2) ? first : second
                    _ = try await instance.create(id: "\(owner)-\(index)", data: Data(), expiresIn: .seconds(60))
                    ended += try await instance.recordSession("\(owner)-\(index)", owner: owner, limit: 10)
                }
                #expect(ended.count == 26 && Set(ended).count == 26)
            }
        }
    }
}
