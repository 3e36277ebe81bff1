// The read path: `current`, and how a call finds the state it acts on (the root, or its task's
// innermost scope of this stack) without retaining it.
extension EnvironmentStack {
    /// The state the calling task acts on, its innermost scope of this stack or the root,
    /// unretained: `root` lives as long as the stack, and a scope's state as long as the caller
    /// runs inside the scope.
    ///
    /// NB: the root state's reference count is shared by every thread that uses the stack;
    /// retaining it on every call was a write to memory all threads share.
    @inlinable
    var activeStateUnretained: Unmanaged<StackState<App>> {
        if _fastPath(liveScopes.load(ordering: .acquiring) == 0) { return Unmanaged.passUnretained(root) }
        if let scoped = scopedStateUnretained() { return scoped }
        return live == nil ? Unmanaged.passUnretained(root) : rootReached()
    }

    /// Runs `body` on the state the calling task acts on, without retaining it.
    @inlinable @discardableResult
    package func withActiveState<R, E: Error>(_ body: (StackState<App>) throws(E) -> R) throws(E) -> R {
        // `_withUnsafeGuaranteedRef` rethrows untyped errors; the `Result` keeps `E`.
        try activeStateUnretained._withUnsafeGuaranteedRef { state in
            Result<R, E>(catching: { () throws(E) in try body(state) })
        }.get()
    }

    /// The calling task's innermost scope state of this stack, if any, unretained: the task's
    /// binding keeps it alive while the caller runs inside that scope. While no scope of this
    /// stack is alive (`liveScopes` is zero), callers skip this lookup.
    @inlinable
    package func scopedStateUnretained() -> Unmanaged<StackState<App>>? {
        var address = Scopes.innermostAddress
        while let link = address {
            let (stackID, next) = Unmanaged<ScopeLink>.fromOpaque(link)._withUnsafeGuaranteedRef { ($0.stackID, $0.nextAddress) }
            if stackID == id { return Unmanaged.fromOpaque(link) }
            address = next
        }
        return nil
    }

    /// The environment on top of the stack (of the calling task's scope, inside one).
    ///
    /// Reading a field, as in `appEnvironment.current.config.apiURL`, copies only that field:
    /// no lock, no allocation, no shared memory written.
    ///
    /// - Complexity: O(1).
    @inlinable
    public var current: HabitatEnvironment<App> {
        _read {
            let (frame, slot) = beginRead()
            defer { slot.pointee.endBorrow() }
            // NB: read in place through the frame's address, without retaining the frame (the
            // slot owns it): the reference count of a frame every thread reads is the one piece
            // of shared memory a read would otherwise write.
            yield frame._withUnsafeGuaranteedRef { $0.environmentAddress }.pointee
        }
    }

    /// A copy of ``current``, made field by field (see `HabitatEnvironment.fieldwiseCopy`).
    ///
    /// NB: not `current.fieldwiseCopy`: through the `_read` accessor the compiler copied the
    /// result once more, whole (scope enter + leave 3,178 instructions against 2,537).
    @inlinable
    func currentCopy() -> HabitatEnvironment<App> {
        let (frame, slot) = beginRead()
        defer { slot.pointee.endBorrow() }
        return frame._withUnsafeGuaranteedRef { $0.environmentAddress.pointee.fieldwiseCopy }
    }

    /// Begins a read of the calling task's top frame: the thread's reader slot holds the frame
    /// and counts the borrow, which keeps it alive until `slot.pointee.endBorrow()`.
    @inlinable
    func beginRead() -> (frame: Unmanaged<Frame<App>>, slot: UnsafeMutablePointer<ReaderSlot>) {
        let slot = currentReaderSlot()
        let frame = activeStateUnretained._withUnsafeGuaranteedRef { $0.frame(for: slot) }
        slot.pointee.borrows &+= 1
        return (frame, slot)
    }
}
