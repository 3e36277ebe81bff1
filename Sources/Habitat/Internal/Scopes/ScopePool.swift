public import _HabitatShims

/// A few ended scopes of one stack (each a link with its retired state), kept for reuse.
///
/// NB: one scope at a time per stack is the common case (a test, a request), so the pool has
/// a front slot that a single atomic exchange empties and a single compare-and-swap fills; the
/// locked list behind it is for scopes that end on several threads at once.
@usableFromInline
// Safe: `front` holds a retained link or nil and is only read and written with atomic
// exchanges, so each link it held goes to exactly one taker; `states` is read and written only
// with `lock` held. A link in the pool, with its state, is referenced by the pool alone.
final class ScopePool<App: EnvironmentSchema>: @unchecked Sendable {
    @usableFromInline let front: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    @usableFromInline let lock = Lock()
    // The lock makes access exclusive; a run-time check on top measured as much as the lock.
    @exclusivity(unchecked) @usableFromInline var states: [ScopeLink] = []
    /// Enough for the scopes one stack has open at once on a few threads; more are freed.
    @usableFromInline static var capacity: Int { 8 }

    @usableFromInline init() {
        front = .allocate(capacity: 1)
        front.initialize(to: nil)
    }

    deinit {
        if let link = habitat_atomic_exchange_ptr(front, nil) {
            Unmanaged<ScopeLink>.fromOpaque(link).release()
        }
        front.deallocate()
    }

    @inlinable
    func take() -> ScopeLink? {
        if let link = habitat_atomic_exchange_ptr(front, nil) {
            return Unmanaged<ScopeLink>.fromOpaque(link).takeRetainedValue()
        }
        lock.lock()
        defer { lock.unlock() }
        return states.popLast()
    }

    @inlinable
    func put(_ link: consuming ScopeLink) {
        let address = Unmanaged.passRetained(link).toOpaque()
        if habitat_atomic_cas_ptr(front, nil, address) { return }
        let taken = Unmanaged<ScopeLink>.fromOpaque(address).takeRetainedValue()
        lock.lock()
        if states.count < Self.capacity {
            states.append(taken)
            lock.unlock()
        } else {
            lock.unlock()
        }
    }
}
