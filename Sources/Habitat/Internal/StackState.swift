public import _HabitatShims
#if canImport(Darwin)
public import Darwin
#elseif canImport(Glibc)
public import Glibc
#elseif canImport(Musl)
public import Musl
#endif

/// The frames of one stack, or of one `withEnvironment` scope, and the subscribers to its changes.
///
/// Writers serialise on `lock`; readers don't take it (see ``ReaderSlot``). Every write fills a
/// ``Frame`` (the spare a pop left, or a new one), never changed again while published, and
/// publishes it by storing its stamp; a pop publishes the stamp of the frame it uncovers.
///
/// NB: everything a push, pop or scope runs is `@inlinable`, so the app's module specialises it
/// for its own `EnvironmentSchema`. Unspecialised, each call would look up generic metadata at
/// run time, which measured ten times slower than the work itself.
@usableFromInline
final class StackState<App: EnvironmentSchema>: ManagedBuffer<StackState<App>.Guarded, StateWord> {
    // Not `Sendable` (a `ManagedBuffer` can't be), but safe to share between threads, and shared
    // only through `EnvironmentStack` and `ScopeLink`, which say so: the header (`Guarded`) is read and written only with the mutex in the tail word
    // held; the tail word's stamp is only touched with atomic operations; nothing else is
    // mutable. Frames are only read once published.
    //
    // NB: one allocation holds everything: the mutable state as the header, the stamp and the
    // mutex as the tail. A scope creates one of these, so every allocation saved here is saved
    // per `withEnvironment`. The state lives in raw memory rather than in `var` properties also
    // because Swift checks exclusive access to a class's `var`s at run time, and on the
    // push/pop path those checks cost more than the lock, which already makes access exclusive.

    @usableFromInline
    struct Guarded {
        @usableFromInline var top: Frame<App>
        @usableFromInline var below: [Frame<App>] = []
        @usableFromInline var sequence: UInt64 = 0
        @usableFromInline var subscribers: [UInt64: AsyncStream<EnvironmentChange<App>>.Continuation] = [:]
        @usableFromInline var nextSubscriberID: UInt64 = 0
        /// An empty frame left by a pop, reused by the next push.
        ///
        /// NB: push-then-pop is what tests and previews do all day; with one spare frame the
        /// pair allocates and frees nothing.
        @usableFromInline var spare: Frame<App>?
        /// For a scope's state: the owning stack's count of live scopes, decremented when the
        /// state dies or goes back to its stack's pool.
        @usableFromInline var liveScopes: AtomicCounter?
        /// Whether this state is counted in `liveScopes` now: from `make` or `reuse` until
        /// `retire` or `deinit`.
        @usableFromInline var counted: Bool

        @inlinable
        init(top: Frame<App>, liveScopes: AtomicCounter?) {
            self.top = top
            self.liveScopes = liveScopes
            counted = liveScopes != nil
        }
    }

    /// The one place a frame is filled: the `empty` frame (a spare) refilled when there is one,
    /// a new frame otherwise. Every path that puts an environment on a stack comes here, so each
    /// frame gets its environment, its origin and its stamp together.
    @inlinable
    static func frame(
        _ environment: consuming HabitatEnvironment<App>,
        origin: FrameOrigin,
        stamp: UInt64,
        reusing empty: consuming Frame<App>?
    ) -> Frame<App> {
        if let empty {
            empty.refill(environment, origin: origin, stamp: stamp)
            return empty
        }
        return Frame.make(environment, origin: origin, stamp: stamp)
    }

    /// Creates the state of a stack (or scope) whose base is `base`.
    @inlinable
    static func make(base: consuming HabitatEnvironment<App>, origin: FrameOrigin, liveScopes: AtomicCounter?) -> StackState<App> {
        let stamp = nextStamp()
        let top = frame(base, origin: origin, stamp: stamp, reusing: nil)
        let buffer = StackState.create(minimumCapacity: 1) { _ in
            Guarded(top: top, liveScopes: liveScopes)
        }
        let state = unsafeDowncast(buffer, to: StackState<App>.self)
        state.withUnsafeMutablePointerToElements { word in
            word.initialize(to: StateWord(stamp: stamp))
            Mutex.initialize(StateWord.mutex(in: word))
        }
        liveScopes?.add(1)
        return state
    }

    /// Readies a pooled scope state for a new scope whose base is `base`. The state must be
    /// referenced by nothing but the caller.
    ///
    /// NB: no lock: no other thread can reach a state that only its taker references. (A
    /// change stream's termination handler may still revive it through a weak reference, but
    /// only to remove a subscriber, under the lock; `reuse` doesn't touch the subscribers.)
    @inlinable
    func reuse(base: consuming HabitatEnvironment<App>, origin: FrameOrigin) {
        let stamp = nextStamp()
        var empty: Frame<App>?
        if isKnownUniquelyReferenced(&guarded.pointee.top) {
            _ = guarded.pointee.top.takeEnvironment()
            empty = guarded.pointee.top
        }
        // Otherwise a thread's reader slot still holds the old base: it is left to that slot.
        guarded.pointee.top = Self.frame(consume base, origin: origin, stamp: stamp, reusing: empty.take())
        guarded.pointee.counted = true
        habitat_atomic_store_release_u64(stampWord, stamp)
        guarded.pointee.liveScopes?.add(1)
        checkInvariants()
    }

    /// Ends a scope's life without freeing its memory, so its stack can pool it: forgets its
    /// frames above the base, finishes its change streams and restarts its numbering. The
    /// state must be referenced by nothing but the caller.
    @inlinable
    func retire() {
        // NB: most scopes push nothing and have no subscribers; taking only what is there
        // leaves their empty storage alone instead of allocating anew.
        var below: [Frame<App>] = []
        var subscribers: [AsyncStream<EnvironmentChange<App>>.Continuation] = []
        lock()
        if !guarded.pointee.below.isEmpty { swap(&below, &guarded.pointee.below) }
        if !guarded.pointee.subscribers.isEmpty {
            subscribers = Array(guarded.pointee.subscribers.values)
            guarded.pointee.subscribers.removeAll()
        }
        let wasCounted = guarded.pointee.counted
        guarded.pointee.counted = false
        guarded.pointee.sequence = 0
        checkInvariants()
        unlock()
        for continuation in subscribers { continuation.finish() }
        if wasCounted { guarded.pointee.liveScopes?.subtract(1) }
        _ = below  // released here, after the lock
    }

    @inlinable
    deinit {
        let (subscribers, liveScopes) = withUnsafeMutablePointers { guarded, word in
            Mutex.destroy(StateWord.mutex(in: word))
            return (guarded.pointee.subscribers, guarded.pointee.counted ? guarded.pointee.liveScopes : nil)
        }
        for continuation in subscribers.values { continuation.finish() }
        liveScopes?.subtract(1)
    }

    /// The mutable state; touch only with the lock held.
    @inlinable
    var guarded: UnsafeMutablePointer<Guarded> {
        withUnsafeMutablePointerToHeader { $0 }
    }

    /// The stamp of the frame in `top`; changes with every write.
    @inlinable
    var stampWord: UnsafeMutablePointer<UInt64> {
        withUnsafeMutablePointerToElements { StateWord.stamp(in: $0) }
    }

    @inlinable
    func lock() { Mutex.lock(withUnsafeMutablePointerToElements { StateWord.mutex(in: $0) }) }

    @inlinable
    func unlock() { Mutex.unlock(withUnsafeMutablePointerToElements { StateWord.mutex(in: $0) }) }

    @inlinable
    func loadStamp() -> UInt64 { habitat_atomic_load_acquire_u64(stampWord) }

    // MARK: Reading

    /// Makes the calling thread's slot hold this state's top frame, and returns it unretained:
    /// the slot owns it.
    @inlinable
    func frame(for slot: UnsafeMutablePointer<ReaderSlot>) -> Unmanaged<Frame<App>> {
        if _slowPath(slot.pointee.stamp != loadStamp()) {
            refresh(slot)
        }
        return Unmanaged<Frame<App>>.fromOpaque(slot.pointee.frame.invariantUnwrapped)
    }

    @inlinable
    func refresh(_ slot: UnsafeMutablePointer<ReaderSlot>) {
        lock()
        let top = guarded.pointee.top
        let stamp = loadStamp()
        unlock()
        slot.pointee.replace(with: top, stamp: stamp)
    }

    /// The top environment, copied.
    var topEnvironment: HabitatEnvironment<App> {
        lock()
        defer { unlock() }
        return guarded.pointee.top.environment
    }

    @inlinable
    var depth: Int {
        lock()
        defer { unlock() }
        return guarded.pointee.below.count + 1
    }

    /// Every frame, base first: its origin and its environment, copied.
    var frames: [(origin: FrameOrigin, environment: HabitatEnvironment<App>)] {
        lock()
        defer { unlock() }
        return (guarded.pointee.below + [guarded.pointee.top]).map { ($0.origin, $0.environment) }
    }

    // MARK: Writing

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
                checkInvariants()
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
                checkInvariants()
                unlock()
                // The replaced environment is released here, after the lock, as in `pop()`.
                _ = consume replaced
                return true
            }
            checkInvariants()
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
            checkInvariants()
            unlock()
            return environment
        }
        let environment = old.environment
        checkInvariants()
        unlock()
        withExtendedLifetime(old) {}
        return environment
    }

    /// Publishes `new`'s stamp and tells subscribers. Call with `lock` held, once `new` is the
    /// top; `depth` is the stack's depth with `new` on top.
    @inlinable @inline(__always)
    func publish(_ origin: FrameOrigin, old: Frame<App>, new: Frame<App>, depth: Int) {
        habitat_atomic_store_release_u64(stampWord, new.stamp)
        guarded.pointee.sequence &+= 1
        if _slowPath(!guarded.pointee.subscribers.isEmpty) {
            notify(origin, old: old, new: new, depth: depth)
        }
    }

    /// Sends a change to every subscriber. Call with `lock` held.
    @inlinable @inline(never)
    func notify(_ origin: FrameOrigin, old: Frame<App>, new: Frame<App>, depth: Int) {
        let change = EnvironmentChange(
            kind: origin.operation,
            old: old.environment,
            new: new.environment,
            depth: depth,
            sequence: guarded.pointee.sequence,
            origin: origin
        )
        for continuation in guarded.pointee.subscribers.values {
            continuation.yield(change)
        }
    }

    // MARK: Observing

    /// A new subscription, with its continuation so the subscriber can end it.
    @inlinable
    func subscribe(
        bufferingPolicy: AsyncStream<EnvironmentChange<App>>.Continuation.BufferingPolicy = .unbounded
    ) -> (
        stream: AsyncStream<EnvironmentChange<App>>,
        continuation: AsyncStream<EnvironmentChange<App>>.Continuation
    ) {
        let (stream, continuation) = AsyncStream.makeStream(
            of: EnvironmentChange<App>.self,
            bufferingPolicy: bufferingPolicy
        )
        lock()
        guarded.pointee.nextSubscriberID += 1
        let id = guarded.pointee.nextSubscriberID
        guarded.pointee.subscribers[id] = continuation
        unlock()
        let owner = WeakState(self)
        continuation.onTermination = { _ in
            (owner.state as? StackState<App>)?.removeSubscriber(id)
        }
        return (stream, continuation)
    }

    @inlinable
    func removeSubscriber(_ id: UInt64) {
        lock()
        let removed = guarded.pointee.subscribers.removeValue(forKey: id)
        unlock()
        _ = removed  // released outside the lock
    }
}

/// The tail of a ``StackState``'s allocation: the published stamp, then the writers' mutex.
@usableFromInline
struct StateWord {
    @usableFromInline var stamp: UInt64
    @usableFromInline var mutex = PlatformMutex()

    @inlinable
    init(stamp: UInt64) { self.stamp = stamp }

    @inlinable
    static func stamp(in word: UnsafeMutablePointer<StateWord>) -> UnsafeMutablePointer<UInt64> {
        UnsafeMutableRawPointer(word).assumingMemoryBound(to: UInt64.self)
    }

    @inlinable
    static func mutex(in word: UnsafeMutablePointer<StateWord>) -> UnsafeMutablePointer<PlatformMutex> {
        (UnsafeMutableRawPointer(word) + MemoryLayout<UInt64>.stride).assumingMemoryBound(to: PlatformMutex.self)
    }
}

/// A weak reference to a state, for a stream's termination handler.
@usableFromInline
// Safe: `state` is set once in `init` and only read afterwards (the weak reference itself is
// thread-safe), and what is done with it, removing a subscriber, takes the state's lock.
final class WeakState: @unchecked Sendable {
    @usableFromInline weak var state: AnyObject?

    @inlinable
    init(_ state: AnyObject) { self.state = state }
}

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
