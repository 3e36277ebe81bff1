/// A state's subscribers, and the changes committed but not yet delivered to them.
///
/// A writer records its change under the state's lock, which costs a few references, and
/// delivers after releasing it, holding the feed's delivery lock instead: building a change
/// copies two environments, and every `yield` takes its stream's lock, so with a hundred
/// subscribers delivering under the state's lock stalled every reader that needed it. Each
/// writer delivers what is pending once, in commit order; its own change is delivered (by it,
/// or by the writer before it) when its write returns, and no writer delivers more than one
/// batch, however busy the other writers are.
@usableFromInline
struct ChangeFeed<App: EnvironmentSchema> {
    @usableFromInline typealias Continuation = AsyncStream<EnvironmentChange<App>>.Continuation
    @usableFromInline typealias Subscriber = (id: UInt64, continuation: Continuation)

    @usableFromInline var subscribers: [Subscriber] = []
    @usableFromInline var nextID: UInt64 = 0
    @usableFromInline var sequence: UInt64 = 0
    @usableFromInline var pending: [Committed<App>] = []
    /// Held while delivering; made with the first subscription.
    @usableFromInline var delivery: LockedBox<Void>?

    @inlinable init() {}

    /// Records a committed write. Returns the lock to deliver under, after the state's lock,
    /// when anyone subscribes.
    @inlinable
    mutating func record(_ origin: FrameOrigin, old: Frame<App>, new: Frame<App>, depth: Int) -> LockedBox<Void>? {
        sequence &+= 1
        guard _slowPath(!subscribers.isEmpty) else { return nil }
        pending.append(Committed(origin: origin, old: old, new: new, depth: depth, sequence: sequence, subscribers: subscribers))
        return delivery
    }

    /// Removes a subscriber; returns its continuation.
    @inlinable
    mutating func remove(_ id: UInt64) -> Continuation? {
        guard let index = subscribers.firstIndex(where: { $0.id == id }) else { return nil }
        return subscribers.remove(at: index).continuation
    }

    /// Forgets every subscriber, returning them to be finished, and restarts the numbering.
    @inlinable
    mutating func reset() -> [Subscriber] {
        sequence = 0
        guard !subscribers.isEmpty else { return [] }
        defer { subscribers = [] }
        return subscribers
    }
}

/// A committed change on its way to the subscribers.
@usableFromInline
struct Committed<App: EnvironmentSchema> {
    @usableFromInline let origin: FrameOrigin
    @usableFromInline let old: Frame<App>
    @usableFromInline let new: Frame<App>
    @usableFromInline let depth: Int
    @usableFromInline let sequence: UInt64
    @usableFromInline let subscribers: [ChangeFeed<App>.Subscriber]

    @inlinable
    init(origin: FrameOrigin, old: Frame<App>, new: Frame<App>, depth: Int, sequence: UInt64, subscribers: [ChangeFeed<App>.Subscriber]) {
        self.origin = origin
        self.old = old
        self.new = new
        self.depth = depth
        self.sequence = sequence
        self.subscribers = subscribers
    }

    @usableFromInline
    func deliver() {
        let change = EnvironmentChange(
            kind: origin.operation, old: old.environment, new: new.environment,
            depth: depth, sequence: sequence, origin: origin
        )
        for subscriber in subscribers { subscriber.continuation.yield(change) }
    }
}

extension StackState {
    /// Delivers the pending changes once, in order, holding `delivery`. Called by every write
    /// that recorded a change, after the state's lock.
    @usableFromInline
    func deliverChanges(holding delivery: LockedBox<Void>) {
        delivery.withLock {
            let batch = withGuarded { guarded in
                defer { guarded.feed.pending = [] }
                return guarded.feed.pending
            }
            for committed in batch { committed.deliver() }
        }
    }

    /// A new subscription, and a way to end it.
    @inlinable
    func subscribe(
        bufferingPolicy: AsyncStream<EnvironmentChange<App>>.Continuation.BufferingPolicy = .unbounded
    ) -> (stream: AsyncStream<EnvironmentChange<App>>, stop: @Sendable () -> Void) {
        let (stream, continuation) = AsyncStream.makeStream(of: EnvironmentChange<App>.self, bufferingPolicy: bufferingPolicy)
        let id = withGuarded { guarded in
            if guarded.feed.delivery == nil { guarded.feed.delivery = LockedBox(()) }
            guarded.feed.nextID += 1
            guarded.feed.subscribers.append((guarded.feed.nextID, continuation))
            return guarded.feed.nextID
        }
        // Weak: a stream outliving its stack (or scope) must not keep it alive.
        continuation.onTermination = { [weak self] _ in self?.unsubscribe(id) }
        return (stream, { continuation.finish() })
    }

    @inlinable
    func unsubscribe(_ id: UInt64) {
        _ = withGuarded { $0.feed.remove(id) }  // the continuation is released after the lock
    }
}
