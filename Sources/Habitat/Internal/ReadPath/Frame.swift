/// One environment on a stack, boxed so that publishing it is one pointer store.
///
/// Readers only ever read a frame's environment, in place, through ``environment``. The one
/// write after creation is ``takeEnvironment()``, which moves the environment out of a popped
/// frame that nothing else references, so `pop()` costs no copy.
///
/// Every frame carries a stamp, unique in the process, given when it is filled. The state it
/// sits on publishes the stamp of its top frame, so a stamp names one frame with one content:
/// after a push and a pop, the state's stamp is the old top's again, and a reader that still
/// holds that frame needs no refresh.
///
/// NB: measured against a copy-on-write `HabitatEnvironment` (one box for all fields, which would make
/// this frame unnecessary): the box made pushes cheaper, but every field read then had to
/// retain the box, a write to memory that all reading threads share. Reads are the hot path,
/// so the environment stays a plain struct and the stack boxes it once per push. The frame is a
/// `ManagedBuffer` so that the environment lives in the frame's own allocation, at an address
/// a reader can borrow from without a retain or an exclusivity check.
@usableFromInline
final class Frame<App: EnvironmentSchema>: ManagedBuffer<FrameHeader, HabitatEnvironment<App>> {
    // Not `Sendable` (`ManagedBuffer` can't be), but shared between threads only inside the
    // lock-protected `StackState` and the per-thread `ReaderSlot`, under these rules:
    // the header and the element are written when the frame is created, before it is
    // published, and afterwards only by `takeEnvironment()`, which the owning state calls with
    // its lock held, on a frame that is off the stack and that nothing else references
    // (`isKnownUniquelyReferenced`), so no other thread can read it then or ever again; the
    // state may then keep the empty frame as its spare and `refill()` it, still under its lock,
    // before publishing it again. Every other access is a read.

    /// Creates a frame holding `environment`, made by `origin`, with a new stamp.
    @inlinable
    static func make(_ environment: consuming HabitatEnvironment<App>, origin: FrameOrigin, stamp: UInt64) -> Frame<App> {
        let frame = unsafeDowncast(
            Frame.create(minimumCapacity: 1) { _ in FrameHeader(stamp: stamp, origin: origin) },
            to: Frame<App>.self
        )
        frame.environmentAddress.initialize(to: environment)
        return frame
    }

    @inlinable
    deinit {
        withUnsafeMutablePointers { header, environment in
            if !header.pointee.moved { environment.deinitialize(count: 1) }
        }
    }

    /// Where the environment lives; valid while the frame is alive and not taken.
    @inlinable
    var environmentAddress: UnsafeMutablePointer<HabitatEnvironment<App>> {
        withUnsafeMutablePointerToElements { $0 }
    }

    /// The environment, read in place.
    @inlinable
    var environment: HabitatEnvironment<App> {
        _read { yield environmentAddress.pointee }
    }

    /// Whether the environment was taken out (the frame is a spare, or on its way out).
    @inlinable
    var isEmpty: Bool { withUnsafeMutablePointerToHeader { $0.pointee.moved } }

    /// The stamp the frame was filled with.
    @inlinable
    var stamp: UInt64 { withUnsafeMutablePointerToHeader { $0.pointee.stamp } }

    /// How the frame was made.
    @inlinable
    var origin: FrameOrigin { withUnsafeMutablePointerToHeader { $0.pointee.origin } }

    /// Puts `environment` into a frame whose environment was taken, with a new stamp and the
    /// origin of the write that refills it, so the frame can be pushed again without an
    /// allocation. Call with the owning state's lock held, on its spare frame.
    @inlinable
    func refill(_ environment: consuming HabitatEnvironment<App>, origin: FrameOrigin, stamp: UInt64) {
        environmentAddress.initialize(to: environment)
        withUnsafeMutablePointerToHeader { $0.pointee = FrameHeader(stamp: stamp, origin: origin) }
    }

    /// Moves the environment out of a frame that nothing else references. Call with the owning
    /// state's lock held, once.
    @inlinable
    func takeEnvironment() -> HabitatEnvironment<App> {
        withUnsafeMutablePointers { header, environment in
            header.pointee.moved = true
            return environment.move()
        }
    }
}

/// A frame's header: its stamp, how it was made, and whether its environment was moved out.
@usableFromInline
struct FrameHeader {
    @usableFromInline var stamp: UInt64
    @usableFromInline var origin: FrameOrigin
    @usableFromInline var moved = false

    @inlinable
    init(stamp: UInt64, origin: FrameOrigin) {
        self.stamp = stamp
        self.origin = origin
    }
}
