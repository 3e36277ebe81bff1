extension Optional {
    /// The wrapped value, which the core's invariants say is there: checked in debug builds and
    /// with `HABITAT_CHECKS` (CI runs the whole suite that way), unchecked otherwise, so the read
    /// path pays no branch for it.
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
