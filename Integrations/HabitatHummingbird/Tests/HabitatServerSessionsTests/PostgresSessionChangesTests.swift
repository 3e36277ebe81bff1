import Foundation
@testable import HabitatPostgres
import HabitatServerSessions
import Testing

/// The PostgreSQL feed's bookkeeping, without a database: what a heartbeat vouches for, and
/// that a lost connection's word stops at its loss (the fleet test shows both on PostgreSQL,
/// behind a link that goes silent).
@Suite struct PostgresSessionChangesTests {
    let clock = ContinuousClock()

    @Test func aHeartbeatVouchesFromWhenItWasSentNotWhenItWasHeard() {
        let start = clock.now
        var beats = PostgresSessionChanges.Beats(deadline: start + .seconds(2))
        beats.sent[1] = start + .seconds(1)
        beats.sent[2] = start + .seconds(2)
        #expect(beats.heard(2, window: .seconds(2)) == start + .seconds(4), "two heartbeats from its sending")
        #expect(beats.heard(1, window: .seconds(2)) == nil, "an older one, heard late, is forgotten")
        #expect(beats.heard(2, window: .seconds(2)) == nil, "heard once")
        #expect(beats.vouch(until: start + .seconds(3)) == start + .seconds(4), "a deadline never moves back")
    }

    @Test func aLostConnectionsWordStopsAtItsLoss() async {
        let told = LockedChanges()
        let link = PostgresSessionChanges.Link { told.append($0) }
        let deadline = clock.now + .seconds(2)
        link.tell(.liveUntil(deadline))
        link.lose("no heartbeat came back within 2.0 seconds")
        link.lose("the listening connection ended")
        // Its stuck tasks end later, and speak: nothing reaches the cache.
        link.tell(.liveUntil(deadline + .seconds(10)))
        link.tell(.changed(id: "k", version: 2))
        await link.lost()   // returns: the link has ended
        #expect(told.all == [.liveUntil(deadline), .lost("no heartbeat came back within 2.0 seconds")])
    }

    @Test func aFeedThatStopsSaysNothingMore() async {
        let told = LockedChanges()
        let link = PostgresSessionChanges.Link { told.append($0) }
        async let ended: Void = link.lost()
        link.close()
        await ended
        link.lose("the listening connection ended")
        link.tell(.live)
        #expect(told.all.isEmpty)
    }
}

/// Changes told, in order.
final class LockedChanges: Sendable {
    private let value = LockedBox<[SessionChange]>([])
    func append(_ change: SessionChange) { value.withLock { $0.append(change) } }
    var all: [SessionChange] { value.withLock { $0 } }
}
