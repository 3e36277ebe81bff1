public import _HabitatShims

// The read path: `current`, and how a call finds the state it acts on (the root, or its task's
// innermost scope of this stack) without retaining it.
extension EnvironmentStack {
    /// The state the calling task acts on, its innermost scope of this stack or the root,
    /// unretained: `root` lives as long as the stack, and a scope's state as long as the caller
    /// runs inside the scope.
    ///
    /// NB: the root state's reference count is shared by every thread that writes the stack;
    /// a push and a pop each retained and released it.
    @inlinable
    var activeStateUnretained: Unmanaged<StackState<App>> {
        if _fastPath(habitat_atomic_load_acquire_u64(liveScopesWord) == 0) {
            return Unmanaged.passUnretained(root)
        }
        return scopedStateUnretained() ?? Unmanaged.passUnretained(root)
    }

    /// Runs `body` on the state the calling task acts on, without retaining it.
    @inlinable @discardableResult
    func withActiveState<R, E: Error>(_ body: (StackState<App>) throws(E) -> R) throws(E) -> R {
        // `_withUnsafeGuaranteedRef` rethrows untyped errors; the `Result` keeps `E`.
        try activeStateUnretained._withUnsafeGuaranteedRef { state in
            Result<R, E>(catching: { () throws(E) in try body(state) })
        }.get()
    }

    /// The calling task's innermost scope state of this stack, if any, unretained: the scope
    /// binding it keeps it alive while the caller runs inside that scope.
    @inlinable
    func scopedStateUnretained() -> Unmanaged<StackState<App>>? {
        var address = Scopes.innermostAddress(key: scopesKey)
        while let link = address {
            let (stackID, state, next) = Unmanaged<ScopeLink>.fromOpaque(link)._withUnsafeGuaranteedRef {
                ($0.stackID, $0.stateAddress, $0.nextAddress)
            }
            if stackID == id { return Unmanaged<StackState<App>>.fromOpaque(state) }
            address = next
        }
        return nil
    }

    /// The environment on top of the stack (of the calling task's scope, inside one).
    ///
    /// Reading a field, as in `AppEnvironment.current.config.apiURL`, copies only that field:
    /// no lock, no allocation, no shared memory written.
    ///
    /// - Complexity: O(1).
    @inlinable
    public var current: HabitatEnvironment<App> {
        _read {
            let slot = currentReaderSlot()
            if _fastPath(habitat_atomic_load_acquire_u64(liveScopesWord) == 0) {
                if _slowPath(slot.pointee.stamp != habitat_atomic_load_acquire_u64(rootStampWord)) {
                    root.refresh(slot)
                }
            } else if let scoped = scopedStateUnretained() {
                _ = scoped._withUnsafeGuaranteedRef { $0.frame(for: slot) }
            } else {
                _ = root.frame(for: slot)
            }
            let frame = Unmanaged<Frame<App>>.fromOpaque(slot.pointee.frame.invariantUnwrapped)
            slot.pointee.borrows &+= 1
            defer { slot.pointee.endBorrow() }
            // NB: read in place through the frame's address, without retaining the frame (the
            // slot owns it): the reference count of a frame every thread reads is the one piece
            // of shared memory a read would otherwise write.
            yield frame._withUnsafeGuaranteedRef { $0.environmentAddress }.pointee
        }
    }
}
