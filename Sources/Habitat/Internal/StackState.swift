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
/// Writers serialise on `lock`; readers don't take it (see ``ReaderSlot``). Every write builds a
/// new immutable ``Frame`` and publishes it by storing a fresh stamp.
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

        @inlinable
        init(top: Frame<App>, liveScopes: AtomicCounter?) {
            self.top = top
            self.liveScopes = liveScopes
        }
    }

    /// Creates the state of a stack (or scope) whose base is `base`.
    @inlinable
    static func make(base: Environment<App>, liveScopes: AtomicCounter?) -> StackState<App> {
        let buffer = StackState.create(minimumCapacity: 1) { _ in
            Guarded(top: Frame.make(base), liveScopes: liveScopes)
        }
        let state = unsafeDowncast(buffer, to: StackState<App>.self)
        state.withUnsafeMutablePointerToElements { word in
            word.initialize(to: StateWord(stamp: nextStamp()))
            Mutex.initialize(StateWord.mutex(in: word))
        }
        liveScopes?.add(1)
        return state
    }

    /// Readies a pooled scope state for a new scope whose base is `base`. The state must be
    /// referenced by nothing but the caller.
    @inlinable
    func reuse(base: Environment<App>, liveScopes: AtomicCounter) {
        lock()
        if isKnownUniquelyReferenced(&guarded.pointee.top) {
            _ = guarded.pointee.top.takeEnvironment()
            guarded.pointee.top.refill(base)
        } else {
            // A thread's reader slot still holds the old base: leave it to that slot.
            guarded.pointee.top = Frame.make(base)
        }
        guarded.pointee.liveScopes = liveScopes
        habitat_atomic_store_release_u64(stampWord, nextStamp())
        unlock()
        liveScopes.add(1)
    }

    /// Ends a scope's life without freeing its memory, so its stack can pool it: forgets its
    /// frames above the base, finishes its change streams and restarts its numbering. The
    /// state must be referenced by nothing but the caller.
    @inlinable
    func retire() {
        lock()
        let below = guarded.pointee.below
        let subscribers = guarded.pointee.subscribers
        let liveScopes = guarded.pointee.liveScopes
        guarded.pointee.below.removeAll(keepingCapacity: true)
        guarded.pointee.subscribers = [:]
        guarded.pointee.sequence = 0
        guarded.pointee.liveScopes = nil
        unlock()
        for continuation in subscribers.values { continuation.finish() }
        liveScopes?.subtract(1)
        _ = below  // released here, after the lock
    }

    @inlinable
    deinit {
        let (subscribers, liveScopes) = withUnsafeMutablePointers { guarded, word in
            Mutex.destroy(StateWord.mutex(in: word))
            return (guarded.pointee.subscribers, guarded.pointee.liveScopes)
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
        return Unmanaged<Frame<App>>.fromOpaque(slot.pointee.frame.unsafelyUnwrapped)
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
    var topEnvironment: Environment<App> {
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

    // MARK: Writing

    /// Applies `transform` to the top environment and commits the result atomically.
    ///
    /// `transform` runs without the lock held, so it may read the stack; if another writer
    /// committed meanwhile, it runs again on the newer top. Returning `nil` commits nothing.
    ///
    /// - Returns: The frame that was on top before, or `nil` when nothing was committed.
    @inlinable @discardableResult
    func update<E: Error>(
        _ kind: EnvironmentChangeKind,
        pushing: Bool = false,
        _ transform: (Environment<App>) throws(E) -> Environment<App>?
    ) throws(E) -> Frame<App>? {
        while true {
            // The current top without the lock, through this thread's slot; retained, because
            // `transform` may read the stack and move the slot on.
            let slot = currentReaderSlot()
            let current = frame(for: slot).takeUnretainedValue()
            let expected = slot.pointee.stamp
            guard let new = try transform(current.environment) else { return nil }
            lock()
            guard loadStamp() == expected else {
                unlock()
                continue
            }
            let frame: Frame<App>
            if let spare = guarded.pointee.spare.take() {
                spare.refill(new)
                frame = spare
            } else {
                frame = Frame.make(new)
            }
            if pushing { guarded.pointee.below.append(guarded.pointee.top) }
            guarded.pointee.top = frame
            publish(kind, old: current, new: frame)
            unlock()
            return current
        }
    }

    /// Removes the top frame unless it is the base, and returns its environment.
    @inlinable
    func pop() -> Environment<App>? {
        lock()
        guard let newTop = guarded.pointee.below.popLast() else {
            unlock()
            return nil
        }
        var old = guarded.pointee.top
        guarded.pointee.top = newTop
        publish(.pop, old: old, new: newTop)
        // NB: a popped frame that no reader holds gives up its environment without a copy, and
        // stays as the spare for the next push.
        let environment: Environment<App>
        if isKnownUniquelyReferenced(&old) {
            environment = old.takeEnvironment()
            if guarded.pointee.spare == nil { guarded.pointee.spare = old }
        } else {
            environment = old.environment
        }
        unlock()
        // The frame, and the environment if the caller discards it, are released after the
        // lock, so services that do work in `deinit` can't deadlock on the stack.
        return environment
    }

    /// Stamps the new top and tells subscribers. Call with `lock` held.
    @inlinable
    func publish(_ kind: EnvironmentChangeKind, old: Frame<App>, new: Frame<App>) {
        habitat_atomic_store_release_u64(stampWord, nextStamp())
        guarded.pointee.sequence &+= 1
        guard _slowPath(!guarded.pointee.subscribers.isEmpty) else { return }
        let change = EnvironmentChange(
            kind: kind,
            old: old.environment,
            new: new.environment,
            depth: guarded.pointee.below.count + 1,
            sequence: guarded.pointee.sequence
        )
        for continuation in guarded.pointee.subscribers.values {
            continuation.yield(change)
        }
    }

    // MARK: Observing

    @inlinable
    func changes() -> AsyncStream<EnvironmentChange<App>> {
        subscribe().stream
    }

    /// A new subscription, with its continuation so the subscriber can end it.
    @inlinable
    func subscribe() -> (
        stream: AsyncStream<EnvironmentChange<App>>,
        continuation: AsyncStream<EnvironmentChange<App>>.Continuation
    ) {
        let (stream, continuation) = AsyncStream.makeStream(
            of: EnvironmentChange<App>.self,
            bufferingPolicy: .unbounded
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

/// A few retired scope states of one stack, kept for reuse.
@usableFromInline
// Safe: `states` is read and written only with `lock` held, and a state in the pool is
// referenced by the pool alone.
final class ScopePool<App: EnvironmentSchema>: @unchecked Sendable {
    @usableFromInline let lock = Lock()
    // The lock makes access exclusive; a run-time check on top measured as much as the lock.
    @exclusivity(unchecked) @usableFromInline var states: [StackState<App>] = []
    /// Enough for the scopes one stack has open at once on a few threads; more are freed.
    @usableFromInline static var capacity: Int { 8 }

    @usableFromInline init() {}

    @inlinable
    func take() -> StackState<App>? {
        lock.lock()
        defer { lock.unlock() }
        return states.popLast()
    }

    @inlinable
    func put(_ state: StackState<App>) {
        lock.lock()
        if states.count < Self.capacity {
            states.append(state)
            lock.unlock()
        } else {
            lock.unlock()
        }
    }
}
