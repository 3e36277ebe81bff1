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
    /// `change` runs without the lock, so it may read the stack.
    @inlinable
    func write<E: Error>(
        _ origin: FrameOrigin,
        pushing: Bool,
        _ change: (inout HabitatEnvironment<App>) throws(E) -> Bool
    ) throws(E) -> Bool {
        let slot = currentReaderSlot()
        while true {
            let new: Frame<App>
            var released: Frame<App>?
            var delivery: Lock?
            let committed: Bool
            do {
                // The borrow keeps the frame copied alive (the slot parks it if `change` reads
                // a newer top), so its address names it until the commit compares.
                slot.pointee.borrows &+= 1
                defer { slot.pointee.endBorrow() }
                let source = frame(for: slot)
                var copy = source._withUnsafeGuaranteedRef { $0.environment }
                guard try change(&copy) else { return false }
                new = Self.frame(consume copy, origin: origin, reusing: spare.take())
                let sourceAddress = UInt64(UInt(bitPattern: source.toOpaque()))
                committed = withGuarded { guarded in
                    guard guarded.top.address == sourceAddress else { return false }
                    let old = guarded.top
                    guarded.top = new
                    if pushing { guarded.below.append(old) } else { released = old }
                    published.store(new.address, ordering: .releasing)
                    delivery = guarded.feed.record(origin, old: old, new: new, depth: guarded.below.count + 1)
                    return true
                }
            }
            guard committed else {
                discard(new)
                continue
            }
            if let delivery { deliverChanges(holding: delivery) }
            if let old = released.take() {
                // NB: a replaced top is usually held by this thread's slot alone (the write
                // read it there); moving the slot on to the new top lets it go here.
                if slot.pointee.frame == Unmanaged.passUnretained(old).toOpaque() { slot.pointee.replace(with: new) }
                discard(old)
            }
            return true
        }
    }

    /// Removes the top frame unless it is the base, and returns its environment.
    @inlinable
    func pop(_ origin: FrameOrigin) -> HabitatEnvironment<App>? {
        var popped: Frame<App>?
        let delivery = withGuarded { guarded -> Lock? in
            guard let new = guarded.below.popLast() else { return nil }
            let old = guarded.top
            guarded.top = new
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
