/// The frames of one stack, or of one `withEnvironment` scope, and the subscribers to its changes.
///
/// Writers serialise on `lock`; readers don't take it (see ``ReaderSlot``). Every write builds a
/// new immutable ``Frame`` and publishes it by storing a fresh stamp.
///
/// NB: everything a push, pop or scope runs is `@inlinable`, so the app's module specialises it
/// for its own `EnvironmentSchema`. Unspecialised, each call would look up generic metadata at
/// run time, which measured ten times slower than the work itself.
@usableFromInline
final class StackState<App: EnvironmentSchema>: @unchecked Sendable {
    // Safe: `guarded` is read and written only with `lock` held; `stamp` is atomic; the other
    // properties are immutable. Frames are immutable and Sendable.
    @usableFromInline let lock = Lock()
    /// The mutable state, behind `lock`.
    ///
    /// NB: kept in its own allocation rather than as `var` properties, because Swift checks
    /// exclusive access to a class's `var`s at run time, and on the push/pop path those checks
    /// cost more than the lock. The lock already makes access exclusive.
    @usableFromInline let guarded: UnsafeMutablePointer<Guarded>
    /// The stamp of the frame in `top`; changes with every write.
    @usableFromInline let stamp: AtomicCounter
    /// For a scope's state: the owning stack's count of live scopes, decremented on deinit.
    @usableFromInline let liveScopes: AtomicCounter?

    @usableFromInline
    struct Guarded {
        @usableFromInline var top: Frame<App>
        @usableFromInline var below: [Frame<App>] = []
        @usableFromInline var sequence: UInt64 = 0
        @usableFromInline var subscribers: [UInt64: AsyncStream<EnvironmentChange<App>>.Continuation] = [:]
        @usableFromInline var nextSubscriberID: UInt64 = 0

        @inlinable
        init(top: Frame<App>) { self.top = top }
    }

    @inlinable
    init(base: Environment<App>, liveScopes: AtomicCounter?) {
        guarded = .allocate(capacity: 1)
        guarded.initialize(to: Guarded(top: Frame.make(base)))
        stamp = AtomicCounter(nextStamp())
        self.liveScopes = liveScopes
        liveScopes?.add(1)
    }

    @inlinable
    deinit {
        let subscribers = guarded.pointee.subscribers
        guarded.deinitialize(count: 1)
        guarded.deallocate()
        for continuation in subscribers.values { continuation.finish() }
        liveScopes?.subtract(1)
    }

    // MARK: Reading

    /// Makes the calling thread's slot hold this state's top frame, and returns it unretained:
    /// the slot owns it.
    @inlinable
    func frame(for slot: UnsafeMutablePointer<ReaderSlot>) -> Unmanaged<Frame<App>> {
        if _slowPath(slot.pointee.stamp != stamp.load()) {
            refresh(slot)
        }
        return Unmanaged<Frame<App>>.fromOpaque(slot.pointee.frame.unsafelyUnwrapped)
    }

    @inlinable
    func refresh(_ slot: UnsafeMutablePointer<ReaderSlot>) {
        lock.lock()
        let top = guarded.pointee.top
        let stamp = self.stamp.load()
        lock.unlock()
        slot.pointee.replace(with: top, stamp: stamp)
    }

    /// The top environment, copied.
    var topEnvironment: Environment<App> {
        lock.lock()
        defer { lock.unlock() }
        return guarded.pointee.top.environment
    }

    @inlinable
    var depth: Int {
        lock.lock()
        defer { lock.unlock() }
        return guarded.pointee.below.count + 1
    }

    // MARK: Writing

    /// Applies `transform` to the top environment and commits the result atomically.
    ///
    /// `transform` runs without the lock held, so it may read the stack; if another writer
    /// committed meanwhile, it runs again on the newer top. Returning `nil` commits nothing.
    ///
    /// - Returns: The frame that was on top before, or `nil` when nothing was committed.
    @inlinable @discardableResult
    func update<E: Error>(
        _ kind: EnvironmentChangeKind,
        pushing: Bool = false,
        _ transform: (Environment<App>) throws(E) -> Environment<App>?
    ) throws(E) -> Frame<App>? {
        while true {
            // The current top without the lock, through this thread's slot; retained, because
            // `transform` may read the stack and move the slot on.
            let slot = currentReaderSlot()
            let current = frame(for: slot).takeUnretainedValue()
            let expected = slot.pointee.stamp
            guard let new = try transform(current.environment) else { return nil }
            let frame = Frame.make(new)
            lock.lock()
            guard stamp.load() == expected else {
                lock.unlock()
                continue
            }
            if pushing { guarded.pointee.below.append(guarded.pointee.top) }
            guarded.pointee.top = frame
            publish(kind, old: current, new: frame)
            lock.unlock()
            return current
        }
    }

    /// Removes the top frame unless it is the base, and returns its environment.
    @inlinable
    func pop() -> Environment<App>? {
        lock.lock()
        guard let newTop = guarded.pointee.below.popLast() else {
            lock.unlock()
            return nil
        }
        var old = guarded.pointee.top
        guarded.pointee.top = newTop
        publish(.pop, old: old, new: newTop)
        // NB: a popped frame that no reader holds gives up its environment without a copy.
        let environment = isKnownUniquelyReferenced(&old) ? old.takeEnvironment() : old.environment
        lock.unlock()
        // The frame, and the environment if the caller discards it, are released after the
        // lock, so services that do work in `deinit` can't deadlock on the stack.
        return environment
    }

    /// Stamps the new top and tells subscribers. Call with `lock` held.
    @inlinable
    func publish(_ kind: EnvironmentChangeKind, old: Frame<App>, new: Frame<App>) {
        stamp.store(nextStamp())
        guarded.pointee.sequence &+= 1
        guard _slowPath(!guarded.pointee.subscribers.isEmpty) else { return }
        let change = EnvironmentChange(
            kind: kind,
            old: old.environment,
            new: new.environment,
            depth: guarded.pointee.below.count + 1,
            sequence: guarded.pointee.sequence
        )
        for continuation in guarded.pointee.subscribers.values {
            continuation.yield(change)
        }
    }

    // MARK: Observing

    @inlinable
    func changes() -> AsyncStream<EnvironmentChange<App>> {
        subscribe().stream
    }

    /// A new subscription, with its continuation so the subscriber can end it.
    @inlinable
    func subscribe() -> (
        stream: AsyncStream<EnvironmentChange<App>>,
        continuation: AsyncStream<EnvironmentChange<App>>.Continuation
    ) {
        let (stream, continuation) = AsyncStream.makeStream(
            of: EnvironmentChange<App>.self,
            bufferingPolicy: .unbounded
        )
        lock.lock()
        guarded.pointee.nextSubscriberID += 1
        let id = guarded.pointee.nextSubscriberID
        guarded.pointee.subscribers[id] = continuation
        lock.unlock()
        continuation.onTermination = { [weak self] _ in
            self?.removeSubscriber(id)
        }
        return (stream, continuation)
    }

    @inlinable
    func removeSubscriber(_ id: UInt64) {
        lock.lock()
        let removed = guarded.pointee.subscribers.removeValue(forKey: id)
        lock.unlock()
        _ = removed  // released outside the lock
    }
}
