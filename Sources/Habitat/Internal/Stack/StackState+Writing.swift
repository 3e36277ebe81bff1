// Writes: the optimistic copy-change-commit loop, and pop.
extension StackState {
    /// Pushes a copy of the top, changed by `change`, atomically.
    ///
    /// `change` runs without the lock held, so it may read the stack; if another writer
    /// committed meanwhile, it runs again on a copy of the newer top.
    @inlinable
    func push<E: Error>(_ origin: FrameOrigin, _ change: (inout HabitatEnvironment<App>) throws(E) -> Void) throws(E) {
        _ = try write(origin, pushing: true) { (environment) throws(E) in
            try change(&environment)
            return true
        }
    }

    /// Replaces the top with a copy changed by `change`, atomically; see ``push(_:_:)``. When
    /// `change` returns `false`, nothing is committed. The new frame, and the change published,
    /// carry `origin`.
    ///
    /// - Returns: Whether the change was committed.
    @inlinable @discardableResult
    func update<E: Error>(
        _ origin: FrameOrigin,
        _ change: (inout HabitatEnvironment<App>) throws(E) -> Bool
    ) throws(E) -> Bool {
        try write(origin, pushing: false, change)
    }

    /// The optimistic write loop behind ``push(_:_:)`` and ``update(_:_:)``: copies the top it
    /// reads through the calling thread's slot, changes the copy without the lock, and commits
    /// under the lock if the stamp is still the one it read.
    ///
    /// NB: the top is copied straight out of the frame the slot holds, the copy is changed in
    /// place and moved into its frame, and frames move between `top`, `below` and the spare: a
    /// push and a pop copy the environment once and touch no reference count but the frames'.
    @inlinable
    func write<E: Error>(
        _ origin: FrameOrigin,
        pushing: Bool,
        _ change: (inout HabitatEnvironment<App>) throws(E) -> Bool
    ) throws(E) -> Bool {
        while true {
            let slot = currentReaderSlot()
            let top = frame(for: slot)._withUnsafeGuaranteedRef { $0.environmentAddress }
            let expected = slot.pointee.stamp
            // The copy is taken before `change` runs: whatever `change` reads, the frame it
            // came from isn't needed any more.
            var new = top.pointee
            guard try change(&new) else { return false }
            let stamp = slot.pointee.takeStamp()
            lock()
            // The stamp names the frame: equal means the frame copied is still the top.
            guard loadStamp() == expected else {
                unlock()
                continue
            }
            var frame = Self.frame(consume new, origin: origin, stamp: stamp, reusing: guarded.pointee.spare.take())
            swap(&guarded.pointee.top, &frame)
            // `frame` is now the old top.
            publish(origin, old: frame, new: guarded.pointee.top, depth: guarded.pointee.below.count + (pushing ? 2 : 1))
            if pushing {
                guarded.pointee.below.append(frame)
                unlock()
                return true
            }
            // NB: a replaced top is usually held by this thread's slot alone (the write read it
            // there); moving the slot on to the new top frees the old one to be the spare, so
            // a run of logins and logouts neither refreshes the slot nor allocates.
            if slot.pointee.frame == Unmanaged.passUnretained(frame).toOpaque() && slot.pointee.borrows == 0 {
                slot.pointee.replace(with: guarded.pointee.top, stamp: stamp)
            }
            if isKnownUniquelyReferenced(&frame) {
                let replaced = frame.takeEnvironment()
                if guarded.pointee.spare == nil { guarded.pointee.spare = consume frame }
                unlock()
                // The replaced environment is released here, after the lock, as in `pop()`.
                _ = consume replaced
                return true
            }
            unlock()
            // Another thread holds the old top; should it let go meanwhile, the last release
            // (and the environment's) must still come after the lock.
            withExtendedLifetime(frame) {}
            return true
        }
    }

    /// Removes the top frame unless it is the base, and returns its environment; the change
    /// published carries `origin`.
    @inlinable
    func pop(_ origin: FrameOrigin) -> HabitatEnvironment<App>? {
        lock()
        guard var old = guarded.pointee.below.popLast() else {
            unlock()
            return nil
        }
        swap(&guarded.pointee.top, &old)
        // `old` is now the frame that was on top.
        publish(origin, old: old, new: guarded.pointee.top, depth: guarded.pointee.below.count + 1)
        // NB: a popped frame that no reader holds gives up its environment without a copy, and
        // stays as the spare for the next push. A thread that pushed and then read holds the
        // pushed frame in its own slot: that hold is let go of first.
        var unique = isKnownUniquelyReferenced(&old)
        if !unique {
            let slot = currentReaderSlot()
            if slot.pointee.frame == Unmanaged.passUnretained(old).toOpaque() && slot.pointee.borrows == 0 {
                slot.pointee.forget()
                unique = isKnownUniquelyReferenced(&old)
            }
        }
        // The frame, and the environment if the caller discards it, are released after the
        // lock, so services that do work in `deinit` can't deadlock on the stack.
        if unique {
            let environment = old.takeEnvironment()
            if guarded.pointee.spare == nil { guarded.pointee.spare = consume old }
            unlock()
            return environment
        }
        let environment = old.environment
        unlock()
        withExtendedLifetime(old) {}
        return environment
    }
}
