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
    func unlock() {
        // Whatever a holder of the lock changed, it leaves the state whole (checked only in
        // builds with HABITAT_CHECKS; nothing otherwise).
        checkInvariants()
        Mutex.unlock(withUnsafeMutablePointerToElements { StateWord.mutex(in: $0) })
    }

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

}
