/// The frames of one stack, or of one `withEnvironment` scope, and its change feed.
///
/// Writers serialise on the lock in `guarded`; readers don't take it (see ``ReaderSlot``).
/// Every write fills a ``Frame`` (the spare a pop left, or a new one), never changed again while
/// anything else holds it, and publishes its address in `published`.
///
/// A state is also the ``ScopeLink`` that binds it to a task: a scope is one object.
///
/// NB: everything a push, pop or scope runs is `@inlinable`, so the app's module specialises it
/// for its own `EnvironmentSchema`. Unspecialised, each call would look up generic metadata at
/// run time, which measured ten times slower than the work itself.
@usableFromInline
// Safe: the mutable state is in `guarded`, reached only with its lock held; `published` and
// `liveScopes` are atomic; `next` (from `ScopeLink`) is written only on an unbound state.
package final class StackState<App: EnvironmentSchema>: ScopeLink, @unchecked Sendable {
    /// The top frame's address, stored under the lock by every write and loaded by readers
    /// without it.
    @usableFromInline let published: AtomicWord
    @usableFromInline let guarded: Locked<Guarded>
    /// An empty frame a pop left, for the next push to fill.
    ///
    /// NB: push-then-pop is what tests and previews do all day; with a spare frame the pair
    /// allocates and frees nothing (measured in the "How the stack works" article).
    @usableFromInline let spare = AtomicBox<Frame<App>>()
    /// For a scope's state: its stack's count of live scopes, which this state is in while
    /// `counted`.
    @usableFromInline let liveScopes: AtomicWord?

    @usableFromInline
    struct Guarded {
        @usableFromInline var top: Frame<App>
        @usableFromInline var below: [Frame<App>] = []
        @usableFromInline var feed = ChangeFeed<App>()
        /// Whether the state is in `liveScopes` now: from `init` or `reuse` until `retire`.
        @usableFromInline var counted: Bool
        /// The reader slot (one per thread, `currentReaderSlot()`) of the thread that made the
        /// last write, `nil` after a pop: a write whose commit finds the top moved by its own
        /// thread was written over by its own change. Compared, never read through.
        @usableFromInline var lastWriter: UnsafeMutablePointer<ReaderSlot>?

        @inlinable
        init(top: Frame<App>, counted: Bool) {
            self.top = top
            self.counted = counted
        }
    }

    /// Creates the state of a stack (`liveScopes` `nil`) or of a scope, with `top` at the
    /// bottom: a frame with the base, or an empty one (`Frame.makeEmpty(origin:)`) for a stack
    /// whose base is filled later, by ``fillBaseIfEmpty(_:)``.
    @inlinable
    init(stackID: UInt64, top: Frame<App>, liveScopes: AtomicWord?) {
        published = AtomicWord(top.address)
        guarded = Locked.make(Guarded(top: top, counted: liveScopes != nil))
        self.liveScopes = liveScopes
        liveScopes?.wrappingAdd(1, ordering: .acquiringAndReleasing)
        super.init(stackID: stackID)
    }

    /// Fills an empty base with `environment()`, once; only before anything else used the state.
    /// Returns whether this call filled it.
    @discardableResult
    func fillBaseIfEmpty(_ environment: () -> HabitatEnvironment<App>) -> Bool {
        guarded.withLock { guarded in
            guard guarded.below.isEmpty, guarded.top.isEmpty else { return false }
            let origin = guarded.top.origin
            guarded.top.refill(environment(), origin: origin)
            return true
        }
    }

    @inlinable
    deinit {
        let (subscribers, counted) = guarded.withLock { ($0.feed.subscribers, $0.counted) }
        for subscriber in subscribers { subscriber.continuation.finish() }
        if counted { liveScopes?.wrappingSubtract(1, ordering: .acquiringAndReleasing) }
    }

    /// The one place a frame is filled: `empty` (a spare, or a scope's old base) refilled, or a
    /// new frame. Every path that puts an environment on a stack comes here.
    @inlinable
    static func frame(
        _ environment: consuming HabitatEnvironment<App>,
        origin: consuming FrameOrigin,
        reusing empty: consuming Frame<App>?
    ) -> Frame<App> {
        guard let empty else { return Frame.make(environment, origin: origin) }
        empty.refill(environment, origin: origin)
        return empty
    }

    /// Runs `body` with the lock held; what it leaves is checked in builds with HABITAT_CHECKS.
    @inlinable
    func withGuarded<R>(_ body: (inout Guarded) -> R) -> R {
        guarded.withLock { guarded in
            defer { checkInvariants(guarded) }
            return body(&guarded)
        }
    }

    // MARK: Scope life

    /// Readies a pooled state for a new scope whose base is `base`. Only on a state nothing
    /// but the caller references.
    @inlinable
    func reuse(base: consuming HabitatEnvironment<App>, origin: consuming FrameOrigin) {
        var base = Optional(base)
        var origin = Optional(origin)
        withGuarded { guarded in
            // `retire` emptied the top; while a thread's reader slot still holds it, the base is
            // a new frame and the slot frees the old one.
            let empty = isKnownUniquelyReferenced(&guarded.top) ? guarded.top : nil
            guarded.top = Self.frame(base.take()!, origin: origin.take()!, reusing: empty)
            published.store(guarded.top.address, ordering: .releasing)
            liveScopes?.wrappingAdd(1, ordering: .acquiringAndReleasing)
            guarded.counted = true
        }
    }

    /// Ends a scope's life without freeing its memory, so its stack can pool it: forgets the
    /// frames, destroys the environments it holds (a pooled state keeps nothing of its scope
    /// alive) and finishes the change streams. Only on a state nothing but the caller references.
    @inlinable
    func retire() {
        let (below, subscribers, counted) = withGuarded { guarded in
            // NB: most scopes push nothing and have no subscribers; leaving their empty arrays
            // alone allocates nothing.
            var below: [Frame<App>] = []
            if !guarded.below.isEmpty { swap(&below, &guarded.below) }
            // NB: reader slots may still hold the top (the threads that read in the scope), but
            // no task is in the scope any more to read it: a slot only compares the frame's
            // address and lets go of it (see `Frame`).
            _ = guarded.top.takeEnvironment()
            defer { guarded.counted = false }
            return (below, guarded.feed.reset(), guarded.counted)
        }
        for subscriber in subscribers { subscriber.continuation.finish() }
        if counted { liveScopes?.wrappingSubtract(1, ordering: .acquiringAndReleasing) }
        _ = below  // the frames are released here, after the lock
    }

    // MARK: Inspecting (with the lock; reads go through `ReadPath/`)

    /// The top environment, copied.
    package var topEnvironment: HabitatEnvironment<App> { withGuarded { $0.top.environment } }

    @inlinable
    var depth: Int { withGuarded { $0.below.count + 1 } }

    /// How many change streams are subscribed: for tests that show a subscriber went away.
    var subscriberCount: Int { withGuarded { $0.feed.subscribers.count } }

    /// Every frame, base first: its origin and its environment, copied.
    var frames: [(origin: FrameOrigin, environment: HabitatEnvironment<App>)] {
        withGuarded { guarded in (guarded.below + [guarded.top]).map { ($0.origin, $0.environment) } }
    }
}
