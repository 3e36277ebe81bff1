/// The stack core's invariant checks.
///
/// Built with `-Xswiftc -DHABITAT_CHECKS` (CI runs the whole suite that way), every release
/// of a state's lock, and every scope reuse, checks the state it leaves (see
/// ``StackState/checkInvariants()``), and ``Swift/Optional/invariantUnwrapped`` traps on `nil`.
/// Without it the checks compile to nothing, and the unwraps that the read path relies on cost
/// no branch.

extension Optional {
    /// The wrapped value, which the core's invariants say is there: checked in debug builds and
    /// with `HABITAT_CHECKS`, unchecked otherwise.
    @inlinable @inline(__always)
    var invariantUnwrapped: Wrapped {
        #if HABITAT_CHECKS || DEBUG
        guard let value = self else { preconditionFailure("Habitat invariant broken: an unwrapped value was nil") }
        return value
        #else
        return unsafelyUnwrapped
        #endif
    }
}

/// Traps with `message` when `condition` is false, in builds with `HABITAT_CHECKS`.
@inlinable @inline(__always)
func checkInvariant(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String) {
    #if HABITAT_CHECKS
    precondition(condition(), "Habitat invariant broken: \(message())")
    #endif
}

extension StackState {
    /// Checks what every holder of the lock, and every scope reuse, must leave behind. Call with
    /// the lock held (``unlock()`` does), or on a state nothing else references.
    @inlinable
    func checkInvariants() {
        #if HABITAT_CHECKS
        let guarded = guarded.pointee
        checkInvariant(loadStamp() == guarded.top.stamp, "the published stamp names the top frame")
        checkInvariant(!guarded.top.isEmpty, "the top frame holds an environment")
        checkInvariant(guarded.below.allSatisfy { !$0.isEmpty && $0 !== guarded.top }, "every frame below holds an environment")
        checkInvariant(guarded.spare.map { $0.isEmpty && $0 !== guarded.top } ?? true, "the spare frame is empty and off the stack")
        checkInvariant((guarded.liveScopes?.load() ?? 0) < 1 << 62, "the live-scope count never goes below zero")
        checkInvariant(guarded.liveScopes == nil || !guarded.counted || (guarded.liveScopes?.load() ?? 0) >= 1, "a counted scope is counted")
        #endif
    }
}
