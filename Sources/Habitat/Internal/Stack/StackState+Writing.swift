// Writes: the optimistic copy-change-commit loop, and pop. Each takes the lock once and
// returns what to release and deliver after it, so that services doing work in `deinit`, and
// change subscribers, never run under the stack's lock.
extension StackState {
    /// Pushes a copy of the top, changed by `change`, atomically; see ``write(_:pushing:_:)``.
    @inlinable
    func push<E: Error>(_ origin: FrameOrigin, _ change: (inout HabitatEnvironment<App>) throws(E) -> Void) throws(E) {
        _ = try write(origin, pushing: true) { (environment) throws(E) in
            try change(&environment)
            return true
        }
    }

    /// Replaces the top with a copy changed by `change`, atomically; see ``write(_:pushing:_:)``.
    ///
    /// - Returns: Whether the change was committed (`change` returned `true`).
    @inlinable @discardableResult
    func update<E: Error>(_ origin: FrameOrigin, _ change: (inout HabitatEnvironment<App>) throws(E) -> Bool) throws(E) -> Bool {
        try write(origin, pushing: false, change)
    }

    /// Copies the top, changes the copy without the lock, and commits it under the lock if the
    /// top is still the frame copied; otherwise runs `change` again on the newer top. When
    /// `change` returns `false`, nothing is committed.
    ///
    /// `change` runs without the lock, so it may read the stack. A write it makes to the stack
    /// moves the top, so it runs again; a change that writes on every run would never commit:
    /// after `ownWritesLimit` runs in a row that wrote, that traps, naming the write
    /// (`Diagnostics/OwnWrites.swift`).
    @inlinable
    func write<E: Error>(
        _ origin: FrameOrigin,
        pushing: Bool,
        _ change: (inout HabitatEnvironment<App>) throws(E) -> Bool
    ) throws(E) -> Bool {
        var ownWrites = 0
        while true {
            var released: Frame<App>?
            var delivery: LockedBox<Void>?
            // `nil` when `change` declined. The frame copied stays alive until the commit
            // compares it with the top (see `withTopFrame`).
            let outcome = try withTopFrame { (source, slot) throws(E) -> (new: Frame<App>, committed: Bool)? in
                var copy = source.environment.fieldwiseCopy
                guard try change(&copy) else { return nil }
                let new = Self.frame(consume copy, origin: origin, reusing: spare.take())
                let committed = withGuarded { guarded in
                    guard guarded.top === source else { return false }
                    let old = guarded.top
                    guarded.top = new
                    guarded.lastWriter = slot
                    if pushing { guarded.below.append(old) } else { released = old }
                    published.store(new.address, ordering: .releasing)
                    delivery = guarded.feed.record(origin, old: old, new: new, depth: guarded.below.count + 1)
                    return true
                }
                return (new, committed)
            }
            guard let (new, committed) = outcome else { return false }
            guard committed else {
                // NB: read after the commit failed: a thread that moved the top since is only
                // this one when `change` wrote (this thread wrote nothing else meanwhile).
                ownWrites = withGuarded { $0.lastWriter } == currentReaderSlot() ? ownWrites + 1 : 0
                if ownWrites == Self.ownWritesLimit { Self.writtenByItsOwnChange(origin) }
                discard(new)
                continue
            }
            if let delivery { deliverChanges(holding: delivery) }
            if let old = released.take() {
                moveReaderSlot(from: old, to: new)
                discard(old)
            }
            return true
        }
    }

    /// Removes the top frame unless it is the base, and returns its environment.
    @inlinable
    func pop(_ origin: FrameOrigin) -> HabitatEnvironment<App>? {
        var popped: Frame<App>?
        let delivery = withGuarded { guarded -> LockedBox<Void>? in
            guard let new = guarded.below.popLast() else { return nil }
            let old = guarded.top
            guarded.top = new
            guarded.lastWriter = nil   // a pop in a change ends at the base: it can't loop
            popped = old
            published.store(new.address, ordering: .releasing)
            return guarded.feed.record(origin, old: old, new: new, depth: guarded.below.count + 1)
        }
        guard var frame = popped.take() else { return nil }
        if let delivery { deliverChanges(holding: delivery) }
        // A popped frame that nothing else holds gives up its environment without a copy and
        // becomes the spare.
        guard isKnownUniquelyReferenced(&frame) else { return frame.environment }
        let environment = frame.takeEnvironment()
        spare.offer(frame)
        return environment
    }

    /// Lets go of a frame off the stack. When nothing else holds it, its environment is
    /// destroyed here, in code specialised for `App` (see `Frame.deinit`), and the empty frame
    /// becomes the spare.
    @inlinable
    func discard(_ frame: consuming Frame<App>) {
        var frame = frame
        guard isKnownUniquelyReferenced(&frame) else { return }
        _ = frame.takeEnvironment()
        spare.offer(frame)
    }
}
