import Foundation
@testable import Habitat
import Testing

/// Changes are delivered after the writer's lock, one deliverer at a time, in commit order.
@Suite struct ChangeFeedTests {
    typealias Feed = ChangeFeed<TestApp>

    func frame(_ label: String) -> Frame<TestApp> {
        Frame.make(makeEnvironment(label), origin: FrameOrigin(.push, fileID: #fileID, line: #line))
    }

    @Test func aWriteWithoutSubscribersRecordsNothingAndDeliversNothing() {
        var feed = Feed()
        #expect(feed.record(FrameOrigin(.push, fileID: #fileID, line: #line), old: frame("a"), new: frame("b"), depth: 2) == false)
        #expect(feed.pending.isEmpty)
        #expect(feed.sequence == 1, "the numbering counts every write")
    }

    @Test func theFirstWriterDeliversAndLaterOnesLeaveTheirChangesToIt() {
        var feed = Feed()
        let (_, continuation) = AsyncStream.makeStream(of: EnvironmentChange<TestApp>.self)
        feed.subscribers.append((1, continuation))
        let origin = FrameOrigin(.push, fileID: #fileID, line: #line)
        #expect(feed.record(origin, old: frame("a"), new: frame("b"), depth: 2) == true)
        #expect(feed.record(origin, old: frame("b"), new: frame("c"), depth: 3) == false)
        #expect(feed.pending.count == 2)
        #expect(feed.delivering)
    }

    @Test func finishingWhileAnotherThreadDeliversQueuesTheFinishBehindTheChanges() {
        var feed = Feed()
        let (_, continuation) = AsyncStream.makeStream(of: EnvironmentChange<TestApp>.self)
        feed.subscribers.append((1, continuation))
        _ = feed.record(FrameOrigin(.push, fileID: #fileID, line: #line), old: frame("a"), new: frame("b"), depth: 2)
        #expect(feed.remove(1, finishing: true) == nil, "not finished now: a change is still on its way")
        guard case .finish = feed.pending.last else {
            Issue.record("the finish is queued last")
            return
        }
        #expect(feed.subscribers.isEmpty)
    }

    @Test func finishingWhileNobodyDeliversFinishesAtOnce() {
        var feed = Feed()
        let (_, continuation) = AsyncStream.makeStream(of: EnvironmentChange<TestApp>.self)
        feed.subscribers.append((1, continuation))
        #expect(feed.remove(1, finishing: true) != nil)
        #expect(feed.pending.isEmpty)
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
// Safe: `value` is only touched with `lock` held.
private final class Flag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    func set() { lock.withLock { value = true } }
    var isSet: Bool { lock.withLock { value } }
}
