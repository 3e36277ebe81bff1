/// A state's subscribers, and the changes committed but not yet delivered to them.
///
/// A writer records its change under the state's lock, which costs a few references, and
/// delivers after releasing it: building a change copies two environments, and every `yield`
/// takes its stream's lock, so with a hundred subscribers delivering under the state's lock
/// stalled every reader that needed the lock. One thread delivers at a time, in the order the
/// changes were committed; a writer that finds another one delivering leaves its change to it.
@usableFromInline
struct ChangeFeed<App: EnvironmentSchema> {
    @usableFromInline typealias Continuation = AsyncStream<EnvironmentChange<App>>.Continuation
    @usableFromInline typealias Subscriber = (id: UInt64, continuation: Continuation)

    @usableFromInline
    enum Delivery {
        case change(FrameOrigin, old: Frame<App>, new: Frame<App>, depth: Int, sequence: UInt64, to: [Subscriber])
        case finish(Continuation)
    }

    @usableFromInline var subscribers: [Subscriber] = []
    @usableFromInline var nextID: UInt64 = 0
    @usableFromInline var sequence: UInt64 = 0
    @usableFromInline var pending: [Delivery] = []
    /// Whether a thread is delivering `pending` (true whenever `pending` isn't empty).
    @usableFromInline var delivering = false

    @inlinable init() {}

    /// Records a committed write. Returns whether the caller must deliver, after the lock.
    @inlinable
    mutating func record(_ origin: FrameOrigin, old: Frame<App>, new: Frame<App>, depth: Int) -> Bool {
        sequence &+= 1
        guard _slowPath(!subscribers.isEmpty) else { return false }
        pending.append(.change(origin, old: old, new: new, depth: depth, sequence: sequence, to: subscribers))
        defer { delivering = true }
        return !delivering
    }

    /// Removes a subscriber and returns its continuation to finish now, or queues the finish
    /// behind the changes still to deliver to it.
    @inlinable
    mutating func remove(_ id: UInt64, finishing: Bool) -> Continuation? {
        guard let index = subscribers.firstIndex(where: { $0.id == id }) else { return nil }
        let continuation = subscribers.remove(at: index).continuation
        guard finishing && delivering else { return continuation }
        pending.append(.finish(continuation))
        return nil
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

extension StackState {
    /// Delivers the recorded changes, in order, until none are left. Only on the thread that
    /// `ChangeFeed.record` told to.
    @usableFromInline
    func deliverChanges() {
        while true {
            let batch = withGuarded { guarded in
                defer { guarded.feed.pending = [] }
                if guarded.feed.pending.isEmpty { guarded.feed.delivering = false }
                return guarded.feed.pending
            }
            if batch.isEmpty { return }
            for delivery in batch {
                switch delivery {
                case .change(let origin, let old, let new, let depth, let sequence, let subscribers):
                    let change = EnvironmentChange(
                        kind: origin.operation, old: old.environment, new: new.environment,
                        depth: depth, sequence: sequence, origin: origin
                    )
                    for subscriber in subscribers { subscriber.continuation.yield(change) }
                case .finish(let continuation):
                    continuation.finish()
                }
            }
        }
    }

    /// A new subscription, and a way to end it after every change already made reached it.
    @inlinable
    func subscribe(
        bufferingPolicy: AsyncStream<EnvironmentChange<App>>.Continuation.BufferingPolicy = .unbounded
    ) -> (stream: AsyncStream<EnvironmentChange<App>>, finish: @Sendable () -> Void) {
        let (stream, continuation) = AsyncStream.makeStream(of: EnvironmentChange<App>.self, bufferingPolicy: bufferingPolicy)
        let id = withGuarded { guarded in
            guarded.feed.nextID += 1
            guarded.feed.subscribers.append((guarded.feed.nextID, continuation))
            return guarded.feed.nextID
        }
        // Weak: a stream outliving its stack (or scope) must not keep it alive.
        continuation.onTermination = { [weak self] _ in self?.unsubscribe(id, finishing: false) }
        return (stream, { [weak self] in
            if let self { self.unsubscribe(id, finishing: true) } else { continuation.finish() }
        })
    }

    @inlinable
    func unsubscribe(_ id: UInt64, finishing: Bool) {
        let continuation = withGuarded { $0.feed.remove(id, finishing: finishing) }
        if finishing { continuation?.finish() }
    }
}
