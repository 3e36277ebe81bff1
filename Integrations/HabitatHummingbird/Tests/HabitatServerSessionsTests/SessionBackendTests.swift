import Foundation
import HabitatPostgres
import HabitatServerSessions
import Logging
import PostgresNIO
import Testing

/// The backend contract, on every available backend (`Backend.available`).
@Suite struct SessionBackendTests {
    @Test(arguments: Backend.available)
    func aSessionRoundTripsAndEachWriteBumpsItsVersion(_ backend: Backend) async throws {
        try await backend.with { backend in
            let sessions = ServerSessions<Visits>(backend: backend)
            let created = try await sessions.create(Visits(member: 1))
            #expect(created.version == 1)
            // 32 random bytes, base64url without padding, then "." and the creation time.
            #expect(created.id.split(separator: ".").first?.count == 43)
            var read = try #require(try await sessions.get(created.id))
            #expect(read == created)
            read.value.count = 5
            let written = try await sessions.set(read)
            #expect(written.version == 2)
            #expect(try await sessions.get(created.id)?.value.count == 5)
            try await sessions.remove(created.id)
            #expect(try await sessions.get(created.id) == nil)
            try await sessions.remove(created.id)   // removing it again is no error
        }
    }

    @Test(arguments: Backend.available)
    func aWriteFromAStaleReadFailsAndWritesNothing(_ backend: Backend) async throws {
        try await backend.with { backend in
            let sessions = ServerSessions<Visits>(backend: backend)
            let created = try await sessions.create(Visits(member: 1))
            var first = created, second = created
            first.value.count = 1
            second.value.count = 100
            _ = try await sessions.set(first)
            await #expect(throws: SessionBackendError.versionConflict(id: created.id, expected: 1, current: 2)) {
                try await sessions.set(second)
            }
            #expect(try await sessions.get(created.id)?.value.count == 1)
            #expect(try await sessions.get(created.id)?.version == 2)
        }
    }

    @Test(arguments: Backend.available)
    func aLiveIDCantBeCreatedTwice(_ backend: Backend) async throws {
        try await backend.with { backend in
            _ = try await backend.create(id: "same-id-\(UUID())", data: Data("a".utf8), expiresIn: .seconds(60))
            let id = "same-id-\(UUID())"
            _ = try await backend.create(id: id, data: Data("a".utf8), expiresIn: .seconds(60))
            await #expect(throws: SessionBackendError.duplicateID(id)) {
                try await backend.create(id: id, data: Data("b".utf8), expiresIn: .seconds(60))
            }
            #expect(try await backend.get(id: id)?.data == Data("a".utf8))
        }
    }

    @Test(arguments: Backend.available)
    func anExpiredSessionIsGoneAndCantBeWritten(_ backend: Backend) async throws {
        try await backend.with { backend in
            // Wall-clock time: the live read is asserted only when it was made within the
            // lifetime (a loaded machine can take longer than that between the two calls).
            let lifetime = Duration.seconds(1), clock = ContinuousClock()
            let sessions = ServerSessions<Visits>(backend: backend, lifetime: lifetime)
            let start = clock.now
            let created = try await sessions.create(Visits(member: 1))
            let read = try await sessions.get(created.id)
            if clock.now - start < lifetime { #expect(read != nil) }
            let createdBy = clock.now
            try await Task.sleep(until: createdBy + lifetime + .milliseconds(300), clock: clock)
            #expect(try await sessions.get(created.id) == nil)
            await #expect(throws: SessionBackendError.versionConflict(id: created.id, expected: 1, current: nil)) {
                try await sessions.set(created)
            }
            await #expect(throws: SessionBackendError.sessionGone(id: created.id)) {
                try await sessions.update(created.id) { $0.count += 1 }
            }
        }
    }

    @Test(arguments: Backend.available)
    func aBulkReadGivesTheLiveSessionsAsTheyAreAndLeavesOutTheRest(_ backend: Backend) async throws {
        try await backend.with { backend in
            let tag = UUID().uuidString
            let (kept, rewritten, removed, expiring) = ("kept-\(tag)", "rewritten-\(tag)", "removed-\(tag)", "expiring-\(tag)")
            _ = try await backend.create(id: kept, data: Data("a".utf8), expiresIn: .seconds(60))
            let first = try await backend.create(id: rewritten, data: Data("b".utf8), expiresIn: .seconds(60))
            _ = try await backend.set(id: rewritten, data: Data("b2".utf8), expiresIn: .seconds(60), expectedVersion: first.version)
            _ = try await backend.create(id: removed, data: Data("c".utf8), expiresIn: .seconds(60))
            try await backend.remove(id: removed)
            _ = try await backend.create(id: expiring, data: Data("d".utf8), expiresIn: .milliseconds(200))
            try await Task.sleep(for: .milliseconds(400))

            let read = try await backend.get(ids: [kept, rewritten, removed, expiring, "never-\(tag)"])
            #expect(Set(read.keys) == [kept, rewritten], "only the live sessions")
            #expect(read[kept]?.data == Data("a".utf8) && read[kept]?.version == 1)
            #expect(read[rewritten]?.data == Data("b2".utf8) && read[rewritten]?.version == 2)
            for (id, session) in read {
                #expect(session == (try await backend.get(id: id)), "as get(id:) reads it")
                #expect(session.expiresIn.map { $0 > .seconds(50) && $0 <= .seconds(60) } == true, "with its time to live")
            }
            #expect(try await backend.get(ids: []).isEmpty)
        }
    }

    @Test(arguments: Backend.available)
    func concurrentUpdatesLoseNothing(_ backend: Backend) async throws {
        try await backend.with { backend in
            let sessions = ServerSessions<Visits>(backend: backend)
            let id = try await sessions.create(Visits(member: 1)).id
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<200 {
                    group.addTask { _ = try await sessions.update(id) { $0.count += 1 } }
                }
                try await group.waitForAll()
            }
            let final = try #require(try await sessions.get(id))
            #expect(final.value.count == 200)
            #expect(final.version == 201)
        }
    }

    @Test(arguments: Backend.available)
    func undecodableDataIsATypedError(_ backend: Backend) async throws {
        try await backend.with { backend in
            let id = "garbage-\(UUID())"
            _ = try await backend.create(id: StoredSession.key(for: id), data: Data("not json".utf8), expiresIn: .seconds(60))
            let sessions = ServerSessions<Visits>(backend: backend)
            await #expect {
                try await sessions.get(id)
            } throws: { error in
                guard case .undecodable(id, _) = error as? SessionBackendError else { return false }
                return true
            }
            #expect(try await backend.get(id: StoredSession.key(for: id))?.data == Data("not json".utf8))   // nothing lost
        }
    }

    @Test(arguments: Backend.available)
    func theBackendHoldsOnlyTheIDsHash(_ kind: Backend) async throws {
        #expect(StoredSession.key(for: "abc") == "ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0")   // SHA-256, base64url
        try await kind.with { backend in
            let sessions = ServerSessions<Visits>(backend: backend)
            let created = try await sessions.create(Visits(member: 1))
            #expect(try await backend.get(id: created.id) == nil, "not under the ID a client presents")
            #expect(try await backend.get(id: StoredSession.key(for: created.id)) != nil)
            if kind == .postgres {
                #expect(try await storedRows(backend, "habitat_sessions", "id", created.id) == 0)
            }
            // Errors name the client's ID, not the key: aWriteFromAStaleReadFailsAndWritesNothing.
        }
    }

    @Test(arguments: Backend.available)
    func aLeaseIsOneHoldersUntilReleasedOrLapsed(_ backend: Backend) async throws {
        try await backend.with { backend in
            let name = "lease-\(UUID())"
            #expect(try await backend.acquireLease(name, holder: "a", duration: .seconds(30)))   // long: slow runs (TSan) must not see it lapse
            #expect(try await !backend.acquireLease(name, holder: "b", duration: .seconds(10)))
            try await backend.releaseLease(name, holder: "b")   // not b's: nothing happens
            #expect(try await !backend.acquireLease(name, holder: "b", duration: .seconds(10)))
            try await backend.releaseLease(name, holder: "a")
            #expect(try await backend.acquireLease(name, holder: "b", duration: .milliseconds(400)))
            // b "crashes" holding it: the lease lapses at its deadline.
            try await Task.sleep(for: .milliseconds(700))
            #expect(try await backend.acquireLease(name, holder: "c", duration: .seconds(10)))
        }
    }

    @Test(arguments: Backend.available)
    func aPurgeDeletesExpiredSessionsAndLapsedLeasesAndKeepsTheRest(_ kind: Backend) async throws {
        try await kind.with { backend in
            let expiring = try await backend.create(id: "expiring-\(UUID())", data: Data("a".utf8), expiresIn: .milliseconds(300))
            let live = try await backend.create(id: "live-\(UUID())", data: Data("b".utf8), expiresIn: .seconds(60))
            let (lapsing, held) = ("lease-\(UUID())", "lease-\(UUID())")
            #expect(try await backend.acquireLease(lapsing, holder: "a", duration: .milliseconds(300)))
            #expect(try await backend.acquireLease(held, holder: "a", duration: .seconds(60)))
            try await Task.sleep(for: .milliseconds(600))

            let purged = try await backend.purgeExpired()
            #expect(try await backend.get(id: live.id)?.data == Data("b".utf8), "a live session stays")
            #expect(try await !backend.acquireLease(held, holder: "b", duration: .seconds(10)), "a held lease stays")
            switch kind {
            case .memory:
                #expect(purged == 1)
                #expect(try await backend.purgeExpired() == 0, "the expired session was deleted, not only hidden")
            case .postgres:
                #expect(purged >= 1)   // other tests' expired sessions share the table
                #expect(try await storedRows(backend, "habitat_sessions", "id", expiring.id) == 0)
                #expect(try await storedRows(backend, "habitat_leases", "name", lapsing) == 0)
                #expect(try await storedRows(backend, "habitat_leases", "name", held) == 1)
            }
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func aScheduledPurgeGoesOnThroughFailuresUntilItsTaskIsCancelled() async throws {
        let backend = PurgeProbe()
        let sessions = ServerSessions<Visits>(backend: backend)
        _ = try await sessions.create(Visits(member: 1))
        let errors = Counter()
        let purging = Task { await sessions.purgeExpired(every: .milliseconds(10)) { _ in errors.increment() } }
        let deadline = ContinuousClock.now + .seconds(30)
        while backend.purges.value < 6, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        purging.cancel()
        await purging.value
        let stopped = backend.purges.value
        #expect(stopped >= 6, "it purged again and again")
        #expect(errors.value >= 3, "each failed purge was reported, and the next one tried")
        try await Task.sleep(for: .milliseconds(100))
        #expect(backend.purges.value == stopped, "no purge once its task is cancelled")
    }
}

/// Refreshes across the fleet: the upstream is asked once, whatever the number of callers.
@Suite struct RefreshTests {
    @Test(arguments: Backend.available)
    func twentyCallersFindingItStaleAtOnceFetchOnce(_ backend: Backend) async throws {
        try await backend.with { backend in
            // Three "instances": three ServerSessions on one backend.
            let instances = (0..<3).map { _ in ServerSessions<Visits>(backend: backend) }
            let id = try await instances[0].create(Visits(member: 1)).id
            let fetches = Counter()
            let answers = try await withThrowingTaskGroup(of: String.self) { group in
                for caller in 0..<20 {
                    group.addTask {
                        try await instances[caller % 3].refresh(id, when: { $0.upstream == "stale" }) { _ in
                            fetches.increment()
                            try await Task.sleep(for: .milliseconds(100))   // the upstream's round trip
                            return "fresh"
                        } apply: { $0.upstream = $1 }.value.upstream
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(fetches.value == 1)
            #expect(answers == Array(repeating: "fresh", count: 20))
        }
    }

    @Test(arguments: Backend.available)
    func aRefreshKeepsWhatOthersWroteMeanwhile(_ backend: Backend) async throws {
        try await backend.with { backend in
            let sessions = ServerSessions<Visits>(backend: backend)
            let id = try await sessions.create(Visits(member: 1)).id
            let refreshed = try await sessions.refresh(id, when: { $0.upstream == "stale" }) { _ in
                // Another request counts a visit while the upstream answers.
                _ = try await sessions.update(id) { $0.count += 1 }
                return "fresh"
            } apply: { $0.upstream = $1 }
            #expect(refreshed.value == Visits(member: 1, count: 1, upstream: "fresh"))
        }
    }

    @Test(arguments: Backend.available)
    func aFetchThatNeverLeftReleasesTheLeaseAndKeepsTheSession(_ backend: Backend) async throws {
        try await backend.with { backend in
            let sessions = ServerSessions<Visits>(backend: backend)
            let id = try await sessions.create(Visits(member: 1)).id
            await #expect(throws: URLError.self) {
                try await sessions.refresh(id, lease: .seconds(60), when: { $0.upstream == "stale" }) { _ -> String in
                    throw URLError(.cannotConnectToHost)
                } apply: { $0.upstream = $1 }
            }
            // Nothing was spent: the lease was released, and the next refresh asks at once.
            let started = ContinuousClock.now
            let fresh = try await sessions.refresh(id, when: { $0.upstream == "stale" }) { _ in "fresh" } apply: { $0.upstream = $1 }
            #expect(fresh.value.upstream == "fresh")
            #expect(ContinuousClock.now - started < .seconds(5))
        }
    }

    /// A dropped answer, a 500 after the upstream rotated: the token may be spent, so the
    /// session ends, and no caller sends it again.
    @Test(arguments: Backend.available)
    func aLostAnswerEndsTheSessionAndNoOneSendsTheTokenAgain(_ backend: Backend) async throws {
        struct ConnectionDropped: Error {}
        try await backend.with { backend in
            let sessions = ServerSessions<Visits>(backend: backend)
            let id = try await sessions.create(Visits(member: 1)).id
            let fetches = Counter()
            await #expect {
                try await sessions.refresh(id, when: { $0.upstream == "stale" }) { _ -> String in
                    fetches.increment()
                    throw ConnectionDropped()
                } apply: { $0.upstream = $1 }
            } throws: { error in
                guard case .refreshUnconfirmed(id, let reason) = error as? SessionBackendError else { return false }
                return reason.contains("answer was lost")
            }
            await expectEndedForGood(id, in: sessions, fetches: fetches)
        }
    }

    /// New tokens that can't be written (the database stopped, the lease lapsed): the session
    /// ends rather than keep the old token, which the upstream has seen.
    @Test(arguments: Backend.available)
    func anAnswerThatCantBeWrittenEndsTheSession(_ backend: Backend) async throws {
        try await backend.with { backend in
            let failing = FailingFencedWrites(base: backend)
            let sessions = ServerSessions<Visits>(backend: failing)
            let id = try await sessions.create(Visits(member: 1)).id
            await #expect {
                try await sessions.refresh(id, when: { $0.upstream == "stale" }) { _ in "fresh" } apply: { $0.upstream = $1 }
            } throws: { error in
                guard case .refreshUnconfirmed(id, let reason) = error as? SessionBackendError else { return false }
                return reason.contains("could not be written")
            }
            #expect(try await sessions.get(id) == nil)
        }
    }

    /// A holder that died under its lease may have spent the token: the next caller, taking
    /// over the lapsed lease, ends the session instead of asking the upstream.
    @Test(arguments: Backend.available)
    func aCrashedHoldersLapsedLeaseEndsTheSessionWithoutSpendingTheToken(_ backend: Backend) async throws {
        try await backend.with { backend in
            let sessions = ServerSessions<Visits>(backend: backend)
            let id = try await sessions.create(Visits(member: 1)).id
            // A holder took the lease and died without releasing it.
            #expect(try await backend.acquireLease("refresh:\(StoredSession.key(for: id))", holder: "crashed", duration: .milliseconds(500)))
            let fetches = Counter()
            await #expect {
                try await sessions.refresh(id, when: { $0.upstream == "stale" }) { _ in
                    fetches.increment()
                    return "fresh"
                } apply: { $0.upstream = $1 }
            } throws: { error in
                guard case .refreshUnconfirmed(id, _) = error as? SessionBackendError else { return false }
                return true
            }
            #expect(fetches.value == 0)
            #expect(try await sessions.get(id) == nil)
        }
    }

    /// A slow backend and a lease shorter than a refresh's writes: whoever comes second finds
    /// the lease lapsed and ends the session; the upstream sees the token once.
    @Test(arguments: Backend.available)
    func aSlowBackendPastTheLeaseSpendsTheTokenOnce(_ backend: Backend) async throws {
        try await backend.with { backend in
            let slow = SlowWrites(base: backend, delay: .milliseconds(400))
            let sessions = ServerSessions<Visits>(backend: slow)
            let id = try await sessions.create(Visits(member: 1)).id
            let sent = Counter()
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<2 {
                    group.addTask {
                        _ = try? await sessions.refresh(id, lease: .milliseconds(300), when: { $0.upstream == "stale" }) { _ in
                            sent.increment()
                            return "fresh"
                        } apply: { $0.upstream = $1 }
                    }
                }
            }
            #expect(sent.value == 1, "the upstream saw the refresh token once")
        }
    }

    @Test(arguments: Backend.available)
    func aSessionSignedOutDuringTheWaitIsGone(_ backend: Backend) async throws {
        try await backend.with { backend in
            let sessions = ServerSessions<Visits>(backend: backend)
            let id = try await sessions.create(Visits(member: 1)).id
            #expect(try await backend.acquireLease("refresh:\(StoredSession.key(for: id))", holder: "other", duration: .seconds(60)))
            let waiting = Task {
                try await sessions.refresh(id, when: { $0.upstream == "stale" }) { _ in "fresh" } apply: { $0.upstream = $1 }
            }
            try await Task.sleep(for: .milliseconds(100))
            try await sessions.remove(id)
            await #expect(throws: SessionBackendError.sessionGone(id: id)) { _ = try await waiting.value }
        }
    }
}

/// The refresh lease fences its holder: a slow upstream never gets a refresh token spent twice.
@Suite struct FencedRefreshTests {
    @Test(arguments: Backend.available)
    func aWriteOrRemovalByAHolderWhoseLeaseLapsedIsRefused(_ backend: Backend) async throws {
        try await backend.with { backend in
            let stored = try await backend.create(id: "fenced-\(UUID().uuidString)", data: Data("v1".utf8), expiresIn: .seconds(60))
            let first = LeaseClaim(name: "refresh:\(stored.id)", holder: "first-\(UUID().uuidString)")
            let second = LeaseClaim(name: first.name, holder: "second-\(UUID().uuidString)")
            // NB: a lease of 2 s, not less: under the thread sanitizer, on a loaded machine, the
            // first write once came more than 300 ms after the lease was taken.
            #expect(try await backend.acquireLease(first.name, holder: first.holder, duration: .seconds(2)))
            let written = try await backend.set(id: stored.id, data: Data("v2".utf8), expiresIn: .seconds(60), expectedVersion: 1, fencedBy: first)
            #expect(written.version == 2)

            try await Task.sleep(for: .milliseconds(2_500))   // the first holder stalls past its lease
            await #expect(throws: SessionBackendError.leaseLapsed(id: stored.id)) {
                try await backend.set(id: stored.id, data: Data("late".utf8), expiresIn: .seconds(60), expectedVersion: 2, fencedBy: first)
            }
            #expect(try await backend.acquireLease(second.name, holder: second.holder, duration: .seconds(60)))
            await #expect(throws: SessionBackendError.leaseLapsed(id: stored.id)) {
                try await backend.set(id: stored.id, data: Data("late".utf8), expiresIn: .seconds(60), expectedVersion: 2, fencedBy: first)
            }
            await #expect(throws: SessionBackendError.leaseLapsed(id: stored.id)) {
                try await backend.remove(id: stored.id, fencedBy: first)
            }
            #expect(try await backend.get(id: stored.id)?.data == Data("v2".utf8))

            let next = try await backend.set(id: stored.id, data: Data("v3".utf8), expiresIn: .seconds(60), expectedVersion: 2, fencedBy: second)
            #expect(next.version == 3)
            try await backend.remove(id: stored.id, fencedBy: second)
            #expect(try await backend.get(id: stored.id) == nil)
        }
    }

    @Test(arguments: Backend.available)
    func anUpstreamPastTheDeadlineEndsTheSessionAndNothingSpendsItsTokenAgain(_ backend: Backend) async throws {
        try await backend.with { backend in
            let sessions = ServerSessions<Visits>(backend: backend)
            let id = try await sessions.create(Visits(member: 1)).id
            let fetches = Counter()
            let started = ContinuousClock.now
            await #expect(throws: SessionBackendError.refreshTimedOut(id: id, after: .milliseconds(300))) {
                try await sessions.refresh(id, lease: .seconds(5), deadline: .milliseconds(300), when: { $0.upstream == "stale" }) { _ -> String in
                    fetches.increment()
                    // An upstream that trickles its answer for 5 s and ignores cancellation.
                    await withCheckedContinuation { done in
                        DispatchQueue.global().asyncAfter(deadline: .now() + 5) { done.resume() }
                    }
                    return "fresh"
                } apply: { $0.upstream = $1 }
            }
            #expect(ContinuousClock.now - started < .seconds(3))   // not the upstream's 5 s
            await expectEndedForGood(id, in: sessions, fetches: fetches)
        }
    }

    @Test(arguments: Backend.available)
    func waitingForAnotherHoldersRefreshHasALimit(_ backend: Backend) async throws {
        try await backend.with { backend in
            let sessions = ServerSessions<Visits>(backend: backend)
            let id = try await sessions.create(Visits(member: 1)).id
            #expect(try await backend.acquireLease("refresh:\(StoredSession.key(for: id))", holder: "busy", duration: .seconds(60)))
            let started = ContinuousClock.now
            await #expect(throws: SessionBackendError.refreshWaitTimedOut(id: id, after: .milliseconds(300))) {
                try await sessions.refresh(id, waitLimit: .milliseconds(300), when: { $0.upstream == "stale" }) { _ in "fresh" } apply: {
                    $0.upstream = $1
                }
            }
            #expect(ContinuousClock.now - started < .seconds(5))
            #expect(try await sessions.get(id)?.value.upstream == "stale")
        }
    }
}

/// A session can't be kept alive forever by writing it: its absolute lifetime ends it.
@Suite struct AbsoluteLifetimeTests {
    @Test(arguments: Backend.available)
    func writesSlideASessionButNotPastItsAbsoluteLifetime(_ backend: Backend) async throws {
        try await backend.with { backend in
            // An ID carries its creation time in whole seconds, so a 4 s lifetime leaves between 3 and
            // 4 s: the write at 0.5 s has 2.5 s to spare on a machine slowed by the thread sanitizer.
            let sessions = ServerSessions<Visits>(backend: backend, lifetime: .seconds(60), absoluteLifetime: .seconds(4))
            let id = try await sessions.create(Visits(member: 1)).id
            try await Task.sleep(for: .milliseconds(500))
            #expect(try await sessions.update(id) { $0.count += 1 }.value.count == 1, "alive, and a write slides it")
            try await Task.sleep(for: .milliseconds(4_100))
            #expect(try await sessions.get(id) == nil, "past its absolute lifetime, whatever the sliding one says")
            await #expect(throws: SessionBackendError.sessionGone(id: id)) { try await sessions.update(id) { $0.count += 1 } }
        }
    }

    @Test(arguments: Backend.available)
    func aTamperedCreationTimeNamesNoSession(_ backend: Backend) async throws {
        try await backend.with { backend in
            let sessions = ServerSessions<Visits>(backend: backend, absoluteLifetime: .seconds(3600))
            let id = try await sessions.create(Visits(member: 1)).id
            let (random, created) = (id.split(separator: ".")[0], Int(id.split(separator: ".")[1], radix: 36)!)
            let younger = "\(random).\(String(created + 3_000, radix: 36))"
            #expect(try await sessions.get(younger) == nil)
            #expect(try await sessions.get(String(random)) == nil, "an ID without its creation time")
            #expect(try await sessions.get(id) != nil)
        }
    }
}

/// A database that can't be reached is a typed, readable error: never a session.
@Test func anUnreachableDatabaseIsUnavailable() async throws {
    // Port 1 on loopback: nothing listens there, the connection is refused at once.
    try await withPostgres(url: "postgres://habitat@127.0.0.1:1/habitat", timeout: .seconds(1)) { backend in
        let started = ContinuousClock.now
        await #expect {
            try await backend.get(id: "any")
        } throws: { error in
            guard case .unavailable(let reason) = error as? SessionBackendError else { return false }
            // The pool keeps trying to connect; the backend's timeout ends the wait.
            return reason == "PostgreSQL did not answer within 1.0 seconds"
        }
        #expect(ContinuousClock.now - started < .seconds(10))
    }
}

/// A caller cancelled while the database doesn't answer stops waiting at once.
@Test func aCancelledCallStopsWaitingAtOnce() async throws {
    try await withPostgres(url: "postgres://habitat@127.0.0.1:1/habitat", timeout: .seconds(60)) { backend in
        let started = ContinuousClock.now
        let call = Task { try await backend.get(id: "any") }
        try await Task.sleep(for: .milliseconds(200))
        call.cancel()
        await #expect(throws: SessionBackendError.unavailable("the task was cancelled before PostgreSQL answered")) {
            try await call.value
        }
        #expect(ContinuousClock.now - started < .seconds(10))
    }
}

/// Every URL with user information is masked, well-formed or not: the password never shows.
@Test(arguments: [
    ("postgres://me:hunter2@db.example.com/app", "postgres://me:***@db.example.com/app"),
    ("postgresql//me:hunter2@db.example.com/app", "postgresql//***@db.example.com/app"),
    ("postgresql:me:hunter2@db.example.com/app", "***@db.example.com/app"),
    ("postgres:/me:hunter2@db.example.com/app", "postgres:/***@db.example.com/app"),
    ("me:hunter2@db.example.com", "***@db.example.com"),
    ("postgres://me:hun/ter@2@db.example.com/app", "postgres://me:***@db.example.com/app"),
    ("postgres://me@db.example.com/app", "postgres://me@db.example.com/app"),
    ("postgres://db.example.com/app", "postgres://db.example.com/app"),
])
func everyURLWithUserInformationIsMasked(_ url: String, _ shown: String) {
    #expect(masked(url) == shown)
    #expect(!masked(url).contains("hunter2") && !masked(url).contains("ter@2"))
}

@Test func aURLThatIsntPostgreSQLIsRefusedWithoutShowingItsPassword() {
    #expect(throws: SessionBackendError.self) { try PostgresSessionBackend.configuration(url: "https://example.com") }
    #expect {
        try PostgresSessionBackend.configuration(url: "mysql://me:hunter2@db.example.com/app")
    } throws: { error in
        "\(error)" == "the session store is unavailable: not a PostgreSQL URL (postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE): mysql://me:***@db.example.com/app"
    }
    #expect(throws: SessionBackendError.self) { try PostgresSessionBackend.configuration(url: "postgres://127.0.0.1/db") }
    let configuration = try? PostgresSessionBackend.configuration(url: "postgres://me:secret@127.0.0.1:6543/app")
    #expect(configuration?.port == 6543)
    #expect(configuration?.username == "me")
    #expect(configuration?.password == "secret")
    #expect(configuration?.database == "app")
}

/// A backend whose fenced writes fail, as when the database stops during the upstream call.
struct FailingFencedWrites: ForwardingBackend {
    let base: any SessionBackend

    func set(id: String, data: Data, expiresIn: Duration, expectedVersion: Int64, fencedBy claim: LeaseClaim) async throws(SessionBackendError) -> StoredSession {
        throw .unavailable("the database stopped")
    }
}

/// A backend whose writes each take `delay`, as a database under load.
struct SlowWrites: ForwardingBackend {
    let base: any SessionBackend
    let delay: Duration

    func set(id: String, data: Data, expiresIn: Duration, expectedVersion: Int64, fencedBy claim: LeaseClaim) async throws(SessionBackendError) -> StoredSession {
        try? await Task.sleep(for: delay)
        return try await base.set(id: id, data: data, expiresIn: expiresIn, expectedVersion: expectedVersion, fencedBy: claim)
    }
}

/// PostgreSQL's fence is strict: a fenced write that began while its holder held the lease, then
/// waited on the row's lock until the lease had lapsed and another holder had taken it, is
/// refused once it gets the lock (the lease is checked by the clock at the check, in a subquery
/// tied to the written row, not by the statement's start).
@Test(.enabled(if: Backend.available.contains(.postgres)))
func aFencedWriteThatWaitedOnARowLockPastItsLeaseIsRefused() async throws {
    let url = ProcessInfo.processInfo.environment["HABITAT_POSTGRES_URL"]!
    let logger = Logger(label: "row-lock")
    try await withPostgres(url: url) { backend in
        try await backend.migrate()
        let stored = try await backend.create(id: "locked-\(UUID().uuidString)", data: Data("v1".utf8), expiresIn: .seconds(60))
        let first = LeaseClaim(name: "refresh:\(stored.id)", holder: "first-\(UUID().uuidString)")
        #expect(try await backend.acquireLease(first.name, holder: first.holder, duration: .milliseconds(700)))
        let locker = PostgresClient(configuration: try PostgresSessionBackend.configuration(url: url))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await locker.run() }
            defer { group.cancelAll() }
            try await locker.withConnection { connection in
                _ = try await connection.query("BEGIN", logger: logger)
                _ = try await connection.query("SELECT 1 FROM habitat_sessions WHERE id = \(stored.id) FOR UPDATE", logger: logger)
                let late = Task {
                    try await backend.set(id: stored.id, data: Data("late".utf8), expiresIn: .seconds(60), expectedVersion: 1, fencedBy: first)
                }
                try await Task.sleep(for: .milliseconds(1_000))   // the lease lapses while the write waits
                #expect(try await backend.acquireLease(first.name, holder: "second", duration: .seconds(60)), "another holder takes it")
                _ = try await connection.query("COMMIT", logger: logger)
                await #expect(throws: SessionBackendError.leaseLapsed(id: stored.id)) { _ = try await late.value }
            }
        }
        #expect(try await backend.get(id: stored.id)?.data == Data("v1".utf8), "the late write didn't land")
    }
}

/// A session made to never expire by hand (`expires = 'infinity'`) reads, alone and among others,
/// with a long but finite remaining life: PostgreSQL 15 refused to subtract the infinite
/// timestamp, and 17 gives an infinite interval, whose seconds the reader turned into a crash.
@Test(.enabled(if: Backend.available.contains(.postgres)))
func aSessionThatNeverExpiresReads() async throws {
    let url = ProcessInfo.processInfo.environment["HABITAT_POSTGRES_URL"]!
    try await withPostgres(url: url) { backend in
        try await backend.migrate()
        let stored = try await backend.create(id: "forever-\(UUID().uuidString)", data: Data("v1".utf8), expiresIn: .seconds(60))
        try await backend.client.query("UPDATE habitat_sessions SET expires = 'infinity' WHERE id = \(stored.id)", logger: Logger(label: "forever"))
        let read = try #require(try await backend.get(id: stored.id))
        #expect(read.data == Data("v1".utf8))
        #expect(read.expiresIn == .seconds(1_000_000_000), "the longest life a read reports")
        #expect(try await backend.get(ids: [stored.id])[stored.id]?.expiresIn == .seconds(1_000_000_000))
        try await backend.remove(id: stored.id)
    }
}

/// Session `id` is gone, and a refresh of it asks the upstream nothing more: `fetches` stays at
/// the one call that spent its token.
func expectEndedForGood(_ id: String, in sessions: ServerSessions<Visits>, fetches: Counter) async {
    #expect((try? await sessions.get(id)) == .some(nil), "the session is gone")
    await #expect(throws: SessionBackendError.sessionGone(id: id)) {
        try await sessions.refresh(id, when: { $0.upstream == "stale" }) { _ in
            fetches.increment()
            return "again"
        } apply: { $0.upstream = $1 }
    }
    #expect(fetches.value == 1, "no refresh token sent again")
}
