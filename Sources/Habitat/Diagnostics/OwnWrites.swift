// What a write says when its own change writes to the same stack on every run (see
// `StackState.write(_:pushing:_:)`): the wording, outside the stack core.
extension StackState {
    /// How many runs in a row of a write's change may write to its own stack before the write
    /// stops the program (a change that writes once, on its first run, commits on its second).
    @usableFromInline static var ownWritesLimit: Int { 100 }

    /// Stops a write whose own `change` wrote to the same stack on each of its last
    /// ``ownWritesLimit`` runs (nothing else on this thread can have moved the top between a
    /// copy and its commit).
    @usableFromInline
    static func writtenByItsOwnChange(_ origin: FrameOrigin) -> Never {
        // NB: `fatalError`, not `preconditionFailure`: its message is printed in optimised builds too.
        fatalError("""
            Habitat: the stack was written to from inside the change of \(origin) on each of its last \
            \(ownWritesLimit) runs (a closure passed to an update, a SessionDependent service's sessionChanged(to:), \
            or EnvironmentSchema.services(_:for:)): each write makes the change run again, so it never commits. \
            Make that write after the change returns.
            """)
    }
}
