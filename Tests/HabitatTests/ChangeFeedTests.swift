import Foundation
@testable import Habitat
@testable import HabitatPersistence
import Testing

/// Changes are delivered after the writer's lock, in commit order, before the write returns.
@Suite struct ChangeFeedTests {
    typealias Feed = ChangeFeed<TestApp>

    func frame(_ label: String) -> Frame<TestApp> {
        Frame.make(makeEnvironment(label), origin: FrameOrigin(.push, fileID: #fileID, line: #line))
    }

    @Test func aWriteWithoutSubscribersRecordsNothingAndDeliversNothing() {
        var feed = Feed()
        let delivery = feed.record(FrameOrigin(.push, fileID: #fileID, line: #line), old: frame("a"), new: frame("b"), depth: 2)
        #expect(delivery == nil, "nothing to deliver")
        #expect(feed.pending.isEmpty)
        #expect(feed.sequence == 1, "the numbering counts every write")
    }

    @Test func aWriteWithSubscribersQueuesItsChangeForDeliveryAfterTheLock() {
        var feed = Feed()
        let (_, continuation) = AsyncStream.makeStream(of: EnvironmentChange<TestApp>.self)
        feed.subscribers.append((1, continuation))
        feed.delivery = LockedBox(())
        let origin = FrameOrigin(.push, fileID: #fileID, line: #line)
        #expect(feed.record(origin, old: frame("a"), new: frame("b"), depth: 2) != nil)
        #expect(feed.record(origin, old: frame("b"), new: frame("c"), depth: 3) != nil)
        #expect(feed.pending.map(\.sequence) == [1, 2], "in commit order")
    }

    @Test func aStoppedRecordingEndsAfterEveryChangeMadeBeforeTheStop() async {
        let stack = makeStack("base")
        let (stream, stop) = stack.recordChanges()
        for step in 1...50 { stack.updateConfig { $0.timeout = step } }
        stop()
        var timeouts: [Int] = []
        for await change in stream { timeouts.append(change.new.config.timeout) }
        #expect(timeouts == Array(1...50), "every change, in order, then the end")
    }

    @Test func aWriteReturnsWhileAnotherThreadKeepsWriting() async {
        // A writer must never be left delivering other threads' changes: with a subscriber and
        // a thread writing without pause, a hundred writes here still return.
        let stack = makeStack("base")
        let busy = stack.changes(bufferingPolicy: .bufferingNewest(1))
        let done = Flag()
        let writer = Thread {
            while !done.isSet { stack.updateConfig { $0.timeout += 1 } }
        }
        writer.start()
        for _ in 0..<100 { stack.push { $0.services.label = "mine" }; _ = stack.pop() }
        done.set()
        #expect(stack.depth == 1)
        withExtendedLifetime(busy) {}
    }

    /// A recording stopped right after its own write still holds that write, while another
    /// thread's writes keep a deliverer busy.
    @Test func aStoppedRecordingKeepsItsLastChangeWhileOthersWrite() async {
        let stack = makeStack("base")
        let busy = stack.changes(bufferingPolicy: .bufferingNewest(1))  // keeps a deliverer busy
        let done = Flag()
        let writer = Thread {
            while !done.isSet {
                stack.login(user: TestUser(id: 1, name: "w"), token: AuthToken("t"))
                stack.logout()
            }
        }
        writer.start()
        for round in 0..<200 {
            let (stream, stop) = stack.recordChanges()
            stack.updateConfig { $0.timeout = round }
            stop()
            var sawMine = false
            for await change in stream where change.kind == .configUpdated {
                sawMine = change.new.config.timeout == round
            }
            #expect(sawMine, "round \(round): the recording ended before its own change arrived")
            if !sawMine { break }
        }
        done.set()
        withExtendedLifetime(busy) {}
    }
}

/// A flag one thread sets and another polls.
private final class Flag: Sendable {
    private let value = LockedBox(false)
    func set() { value.withLock { $0 = true } }
    var isSet: Bool { value.withLock { $0 } }
}
