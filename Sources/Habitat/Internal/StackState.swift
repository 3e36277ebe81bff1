/// The frames of one stack, or of one `withEnvironment` scope, and the subscribers to its changes.
///
/// Writers serialise on `lock`; readers don't take it (see ``ReaderSlot``). Every write builds a
/// new immutable ``Frame`` and publishes it by storing a fresh stamp.
@usableFromInline
final class StackState<App: EnvironmentSchema>: @unchecked Sendable {
    // Safe: `top`, `below`, `sequence`, `subscribers` and `nextSubscriberID` are read and
    // written only with `lock` held; `stamp` is atomic; the other properties are immutable.
    // Frames themselves are immutable and Sendable.
    private let lock = Lock()
    private var top: Frame<App>
    private var below: [Frame<App>] = []
    private var sequence: UInt64 = 0
    private var subscribers: [UInt64: AsyncStream<EnvironmentChange<App>>.Continuation] = [:]
    private var nextSubscriberID: UInt64 = 0
    /// The stamp of the frame in `top`; changes with every write.
    @usableFromInline let stamp: AtomicCounter
    /// For a scope's state: the owning stack's count of live scopes, decremented on deinit.
    private let liveScopes: AtomicCounter?

    init(base: Environment<App>, liveScopes: AtomicCounter?) {
        top = Frame(base)
        stamp = AtomicCounter(nextStamp())
        self.liveScopes = liveScopes
        liveScopes?.add(1)
    }

    deinit {
        for continuation in subscribers.values { continuation.finish() }
        liveScopes?.subtract(1)
    }

    // MARK: Reading

    /// The top frame, through the calling thread's cache. Unretained: the slot owns it.
    @inlinable
    func frame(for slot: UnsafeMutablePointer<ReaderSlot>) -> Unmanaged<Frame<App>> {
        if _slowPath(slot.pointee.stamp != stamp.load()) {
            refresh(slot)
        }
        return Unmanaged<Frame<App>>.fromOpaque(slot.pointee.frame.unsafelyUnwrapped)
    }

    @usableFromInline
    func refresh(_ slot: UnsafeMutablePointer<ReaderSlot>) {
        let (frame, stamp) = lock.withLock { (top, self.stamp.load()) }
        slot.pointee.replace(with: frame, stamp: stamp)
    }

    /// The top frame and its stamp, as one consistent pair.
    private func snapshot() -> (frame: Frame<App>, stamp: UInt64) {
        lock.withLock { (top, stamp.load()) }
    }

    var depth: Int {
        lock.withLock { below.count + 1 }
    }

    // MARK: Writing

    /// Applies `transform` to the top environment and commits the result atomically.
    ///
    /// `transform` runs without the lock held, so it may read the stack; if another writer
    /// committed meanwhile, it runs again on the newer top. Returning `nil` commits nothing.
    ///
    /// - Returns: The environments before and after, or `nil` when nothing was committed.
    @discardableResult
    func update<E: Error>(
        _ kind: EnvironmentChange<App>.Kind,
        pushing: Bool = false,
        _ transform: (Environment<App>) throws(E) -> Environment<App>?
    ) throws(E) -> (old: Environment<App>, new: Environment<App>)? {
        while true {
            let (current, expected) = snapshot()
            guard let new = try transform(current.environment) else { return nil }
            let frame = Frame(new)
            let committed = lock.withLock { () -> Bool in
                guard stamp.load() == expected else { return false }
                if pushing { below.append(top) }
                top = frame
                publish(kind, old: current.environment, new: new)
                return true
            }
            if committed { return (current.environment, new) }
        }
    }

    /// Removes the top frame unless it is the base.
    func pop() -> Environment<App>? {
        let popped: Frame<App>? = lock.withLock {
            guard let newTop = below.popLast() else { return nil }
            let old = top
            top = newTop
            publish(.pop, old: old.environment, new: newTop.environment)
            return old
        }
        // NB: the popped frame is released here, after the lock, so that an environment whose
        // services do work in `deinit` can't deadlock on the stack.
        return popped?.environment
    }

    /// Stamps the new top and tells subscribers. Call with `lock` held.
    private func publish(_ kind: EnvironmentChange<App>.Kind, old: Environment<App>, new: Environment<App>) {
        stamp.store(nextStamp())
        sequence += 1
        guard !subscribers.isEmpty else { return }
        let change = EnvironmentChange(kind: kind, old: old, new: new, depth: below.count + 1, sequence: sequence)
        for continuation in subscribers.values {
            continuation.yield(change)
        }
    }

    // MARK: Observing

    func changes() -> AsyncStream<EnvironmentChange<App>> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: EnvironmentChange<App>.self,
            bufferingPolicy: .unbounded
        )
        let id = lock.withLock { () -> UInt64 in
            nextSubscriberID += 1
            subscribers[nextSubscriberID] = continuation
            return nextSubscriberID
        }
        continuation.onTermination = { [weak self] _ in
            self?.removeSubscriber(id)
        }
        return stream
    }

    private func removeSubscriber(_ id: UInt64) {
        let removed = lock.withLock { subscribers.removeValue(forKey: id) }
        _ = removed  // released outside the lock
    }
}
