public import _HabitatShims

/// A stack of environments: the app's world now, with earlier worlds underneath.
///
/// An app keeps one stack in a global `let` (conventionally named `AppEnvironment`) and reads
/// ``current`` wherever it needs a service, the user or the configuration. Tests and previews
/// ``push(_:label:fileID:line:)`` a changed world and ``pop(fileID:line:)`` it afterwards, or, better,
/// change it for one task with
/// ``withEnvironment(_:fileID:line:operation:)-((HabitatEnvironment<App>)->Void,_,_,_)`` so parallel tests never
/// meet.
///
/// ```swift
/// let AppEnvironment = EnvironmentStack<MyApp>(HabitatEnvironment(services: .live, config:
/// .default))
///
/// AppEnvironment.login(user: account, token: AuthToken("s3cr3t"))
/// let name = AppEnvironment.current.currentUser?.name
///
/// AppEnvironment.push { $0.locale = Locale(identifier: "de_DE") }
/// defer { AppEnvironment.pop() }
/// ```
///
/// Every operation is safe from any thread or task, and each one is atomic: no reader ever sees
/// a half-applied transition. Reading ``current`` takes no lock and allocates nothing.
///
/// ### Scopes
/// Inside ``withEnvironment(_:fileID:line:operation:)-((HabitatEnvironment<App>)->Void,_,_,_)`` the stack acts on a
/// stack of the scope's own, for the calling task and its child tasks only: ``current`` is the
/// scope's top, and ``push(_:label:fileID:line:)``, ``pop(fileID:line:)``, ``login(user:token:fileID:line:)``,
/// ``logout(fileID:line:)`` and the updates change the scope's stack, never the global one or another task's.
/// When the scope ends, they are gone.
// Safe: every stored property is immutable. The two raw pointers point into the atomic
// words of `root` (its stamp) and `liveScopes`, which this object keeps alive, and are only
// read with atomic loads. All mutable state lives in `StackState`, behind its lock.
public final class EnvironmentStack<App: EnvironmentSchema>: @unchecked Sendable {
    /// Process-unique, so a task's scopes can name their stack without retaining it.
    @usableFromInline let id: UInt64
    /// The global (unscoped) stack.
    @usableFromInline let root: StackState<App>
    /// How many scope states of this stack are alive. While it is zero, no task can be in a
    /// scope of this stack, and a read goes straight to `root` without a task-local lookup.
    @usableFromInline let liveScopes = AtomicCounter(0)
    /// Scope states whose scopes ended, ready for the next `withEnvironment`.
    ///
    /// NB: building a scope's state and tearing it down again were most of what a scope cost;
    /// a scope that leaves nothing behind hands its state back here instead.
    @usableFromInline let scopePool = ScopePool<App>()
    /// Where to save after session and configuration changes, if anywhere.
    @usableFromInline let autosave = Autosave<App>()
    /// `liveScopes.storage` and `root.stampWord`, read directly on the hot path.
    ///
    /// NB: reaching them through `self` alone, without touching `root`, keeps the read path
    /// free of retains of objects that every thread shares.
    @usableFromInline let liveScopesWord: UnsafeMutablePointer<UInt64>
    @usableFromInline let rootStampWord: UnsafeMutablePointer<UInt64>
    /// `Scopes.key`, kept here so that a read inside a scope doesn't touch a global.
    @usableFromInline let scopesKey: UnsafeRawPointer

    /// Creates a stack whose base is `base`.
    ///
    /// The base can be replaced (``replaceCurrent(_:label:fileID:line:)``) but never
    /// popped.
    /// - Parameters:
    ///   - base: The environment at the bottom of the stack.
    ///   - fileID: The calling file, recorded as the base's ``FrameOrigin``.
    ///   - line: The calling line, recorded with it.
    public init(_ base: HabitatEnvironment<App>, fileID: StaticString = #fileID, line: UInt = #line) {
        id = stackIDSource.add(1)
        root = StackState.make(base: base, origin: FrameOrigin(.base, fileID: fileID, line: line), liveScopes: nil)
        liveScopesWord = liveScopes.storage
        rootStampWord = root.stampWord
        scopesKey = Scopes.key
    }

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

    // MARK: Reading

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

    /// How many environments are on the stack (in the calling task's scope, inside one),
    /// counting the base. A new stack, or a new scope, has depth 1.
    @inlinable
    public var depth: Int { withActiveState { $0.depth } }

    /// A stream of every change made to the stack from now on, in order.
    ///
    /// Each access returns a new stream that receives the changes made after the access. Inside
    /// a scope the stream follows the scope's stack and finishes when the scope ends.
    ///
    /// ```swift
    /// let changes = AppEnvironment.changes
    /// Task { for await change in changes { log(change.kind, change.new.currentUser) } }
    /// ```
    ///
    /// The stream buffers every change its reader hasn't taken yet, each with two environments.
    /// A subscriber that may fall behind, or stop reading while it lives, bounds its buffer with
    /// ``changes(bufferingPolicy:)``.
    @inlinable
    public var changes: AsyncStream<EnvironmentChange<App>> { withActiveState { $0.subscribe().stream } }

    /// A stream of the changes made to the stack from now on, in order, that buffers at most
    /// what `bufferingPolicy` says while its reader is busy.
    ///
    /// ```swift
    /// // A status bar needs only the latest change.
    /// let latest = AppEnvironment.changes(bufferingPolicy: .bufferingNewest(1))
    /// ```
    /// - Parameter bufferingPolicy: How many unread changes to keep, and which: `.unbounded`
    ///   (what ``changes`` does), `.bufferingNewest(n)` or `.bufferingOldest(n)`.
    /// - Returns: A new stream; inside a scope it follows the scope's stack and finishes when
    ///   the scope ends.
    @inlinable
    public func changes(
        bufferingPolicy: AsyncStream<EnvironmentChange<App>>.Continuation.BufferingPolicy
    ) -> AsyncStream<EnvironmentChange<App>> {
        withActiveState { $0.subscribe(bufferingPolicy: bufferingPolicy).stream }
    }

    /// Records the changes made from now on until `stop` is called; then the stream ends after
    /// the last recorded change. For `HabitatTesting`'s assertions.
    package func recordChanges() -> (stream: AsyncStream<EnvironmentChange<App>>, stop: @Sendable () -> Void) {
        let (stream, continuation) = withActiveState { $0.subscribe() }
        return (stream, { continuation.finish() })
    }
}

@usableFromInline
let stackIDSource = AtomicCounter(0)
