public import _HabitatShims

// The change feed: publishing a write and telling subscribers, and subscribing.
extension StackState {
    /// Publishes `new`'s stamp and tells subscribers. Call with `lock` held, once `new` is the
    /// top; `depth` is the stack's depth with `new` on top.
    @inlinable @inline(__always)
    func publish(_ origin: FrameOrigin, old: Frame<App>, new: Frame<App>, depth: Int) {
        habitat_atomic_store_release_u64(stampWord, new.stamp)
        guarded.pointee.sequence &+= 1
        if _slowPath(!guarded.pointee.subscribers.isEmpty) {
            notify(origin, old: old, new: new, depth: depth)
        }
    }

    /// Sends a change to every subscriber. Call with `lock` held.
    @inlinable @inline(never)
    func notify(_ origin: FrameOrigin, old: Frame<App>, new: Frame<App>, depth: Int) {
        let change = EnvironmentChange(
            kind: origin.operation,
            old: old.environment,
            new: new.environment,
            depth: depth,
            sequence: guarded.pointee.sequence,
            origin: origin
        )
        for continuation in guarded.pointee.subscribers.values {
            continuation.yield(change)
        }
    }


    /// A new subscription, with its continuation so the subscriber can end it.
    @inlinable
    func subscribe(
        bufferingPolicy: AsyncStream<EnvironmentChange<App>>.Continuation.BufferingPolicy = .unbounded
    ) -> (
        stream: AsyncStream<EnvironmentChange<App>>,
        continuation: AsyncStream<EnvironmentChange<App>>.Continuation
    ) {
        let (stream, continuation) = AsyncStream.makeStream(
            of: EnvironmentChange<App>.self,
            bufferingPolicy: bufferingPolicy
        )
        lock()
        guarded.pointee.nextSubscriberID += 1
        let id = guarded.pointee.nextSubscriberID
        guarded.pointee.subscribers[id] = continuation
        unlock()
        let owner = WeakState(self)
        continuation.onTermination = { _ in
            (owner.state as? StackState<App>)?.removeSubscriber(id)
        }
        return (stream, continuation)
    }

    @inlinable
    func removeSubscriber(_ id: UInt64) {
        lock()
        let removed = guarded.pointee.subscribers.removeValue(forKey: id)
        unlock()
        _ = removed  // released outside the lock
    }
}
