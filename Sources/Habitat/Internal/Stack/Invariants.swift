// The stack core's invariant checks. Built with `-Xswiftc -DHABITAT_CHECKS` (CI runs the whole
// suite that way), every release of a state's lock checks the state it leaves; without it the
// checks compile to nothing.
extension StackState {
    /// Checks what every holder of the lock must leave behind (``withGuarded(_:)`` calls it).
    @inlinable
    func checkInvariants(_ guarded: borrowing Guarded) {
        #if HABITAT_CHECKS
        func check(_ condition: Bool, _ message: String) {
            precondition(condition, "Habitat invariant broken: \(message)")
        }
        check(published.load(ordering: .acquiring) == guarded.top.address, "the published address names the top frame")
        check(!guarded.top.isEmpty || !guarded.counted && liveScopes != nil, "the top frame holds an environment (but a pooled scope's)")
        check(guarded.below.allSatisfy { !$0.isEmpty && $0 !== guarded.top }, "every frame below holds an environment")
        let live = liveScopes?.load(ordering: .acquiring) ?? 0
        check(live < 1 << 62, "the live-scope count never goes below zero")
        check(!guarded.counted || live >= 1, "a counted scope is counted")
        #endif
    }
}
