/// One environment on a stack, boxed so that publishing it is one pointer store.
///
/// A frame's address names it while anything holds it: the state a frame sits on publishes
/// its top frame's address, and a reader whose slot holds the frame at that address knows it
/// is current. Readers only read a frame's environment, in place. The writes after creation
/// are ``takeEnvironment()`` and ``refill(_:origin:)``, which a state makes under its lock on a
/// frame off its stack that nothing else references (`isKnownUniquelyReferenced`), so no
/// reader can see them; and a retiring scope state empties its top, which reader slots may
/// still hold but no reader can reach: no task is in the scope any more, the state is bound to
/// no task until its next scope publishes a new top (or refills this one, once no slot holds
/// it), and a slot reads a frame only while a bound state publishes that frame's address.
///
/// NB: the environment stays a plain struct, boxed once per push, because reads are the hot
/// path: with a copy-on-write environment every field read retained the box, a write to
/// memory that all reading threads share. The frame is a `ManagedBuffer` so the environment
/// lives in the frame's own allocation, at an address a reader borrows from without a retain
/// or an exclusivity check.
@usableFromInline
final class Frame<App: EnvironmentSchema>: ManagedBuffer<FrameHeader, HabitatEnvironment<App>> {
    @inlinable
    static func make(_ environment: consuming HabitatEnvironment<App>, origin: consuming FrameOrigin) -> Frame<App> {
        var header = Optional(FrameHeader(origin: origin))
        let frame = unsafeDowncast(create(minimumCapacity: 1) { _ in header.take()! }, to: Frame<App>.self)
        frame.environmentAddress.initialize(to: environment)
        return frame
    }

    /// A frame with no environment yet: a test run's root base before anything reached it.
    static func makeEmpty(origin: consuming FrameOrigin) -> Frame<App> {
        var header = Optional(FrameHeader(origin: origin))
        header?.isEmpty = true
        return unsafeDowncast(create(minimumCapacity: 1) { _ in header.take()! }, to: Frame<App>.self)
    }

    @inlinable
    deinit {
        // NB: a class's deinit is not specialised for the app: finding the environment's type
        // costs a run-time metadata lookup, as much as the rest of a pop. So the header is
        // checked first, and the stack empties the frames it drops (`StackState.discard(_:)`).
        if !isEmpty { environmentAddress.deinitialize(count: 1) }
    }

    /// Where the environment lives; valid while the frame is alive and not empty.
    @inlinable
    var environmentAddress: UnsafeMutablePointer<HabitatEnvironment<App>> { withUnsafeMutablePointerToElements { $0 } }

    @inlinable
    var headerAddress: UnsafeMutablePointer<FrameHeader> { withUnsafeMutablePointerToHeader { $0 } }

    /// The environment, read in place.
    @inlinable
    var environment: HabitatEnvironment<App> { _read { yield environmentAddress.pointee } }

    /// The frame's address, as the state publishes it.
    @inlinable
    var address: UInt64 { UInt64(UInt(bitPattern: Unmanaged.passUnretained(self).toOpaque())) }

    @inlinable
    var origin: FrameOrigin { headerAddress.pointee.origin }

    /// Whether the environment was taken out (the frame is being refilled, or on its way out).
    @inlinable
    var isEmpty: Bool { headerAddress.pointee.isEmpty }

    /// Fills an empty frame again, so a pooled scope can reuse its base frame.
    @inlinable
    func refill(_ environment: consuming HabitatEnvironment<App>, origin: consuming FrameOrigin) {
        environmentAddress.initialize(to: environment)
        headerAddress.pointee = FrameHeader(origin: origin)
    }

    /// Moves the environment out, leaving the frame empty.
    @inlinable
    func takeEnvironment() -> HabitatEnvironment<App> {
        headerAddress.pointee.isEmpty = true
        return environmentAddress.move()
    }
}

/// A frame's header: how it was made, and whether its environment was moved out.
@usableFromInline
struct FrameHeader {
    @usableFromInline var origin: FrameOrigin
    @usableFromInline var isEmpty = false

    @inlinable
    init(origin: consuming FrameOrigin) { self.origin = origin }
}
