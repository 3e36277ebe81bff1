/// One thread's strong reference to the last frame it read.
///
/// NB: this is what makes reading `current` cost a few nanoseconds on any number of threads.
/// A reader compares the address its state publishes with its slot's frame; when they match
/// it reads the frame it already holds, so the hot path writes no shared memory: no lock, and
/// no retain on an object other threads are retaining too. Only when the top moved does it
/// take the state's lock once to pick up the new top. The slot's reference also keeps the
/// frame's address from naming any other frame while the slot compares with it.
///
/// `borrows` counts reads (and writes copying the top) in progress on this thread. They use
/// the frame in place; if the stack changes and this thread reads again meanwhile, the slot
/// parks the frame still in use in `retired` until the outermost borrow ends.
@usableFromInline
struct ReaderSlot {
    @usableFromInline var frame: UnsafeMutableRawPointer?
    @usableFromInline var borrows: Int = 0
    @usableFromInline var retired: [Unmanaged<AnyObject>] = []

    /// The cached frame's address, as states publish theirs; 0 for none.
    @inlinable
    var address: UInt64 { UInt64(UInt(bitPattern: frame)) }

    /// Makes `frame` this thread's cached frame.
    @usableFromInline
    mutating func replace(with frame: AnyObject) {
        let previous = self.frame
        self.frame = Unmanaged.passRetained(frame).toOpaque()
        guard let previous else { return }
        if borrows > 0 {
            retired.append(Unmanaged.fromOpaque(previous))
        } else {
            Unmanaged<AnyObject>.fromOpaque(previous).release()
        }
    }

    /// Ends a borrow begun with `borrows &+= 1`.
    @inlinable
    mutating func endBorrow() {
        borrows &-= 1
        if _slowPath(borrows == 0 && !retired.isEmpty) { drainRetired() }
    }

    @usableFromInline
    mutating func drainRetired() {
        let parked = retired
        retired = []
        for frame in parked { frame.release() }
    }
}

@usableFromInline
let readerSlots = ThreadLocal { raw in
    // The thread exits: let go of the frames its slot held.
    guard let slot = (raw as UnsafeMutableRawPointer?)?.assumingMemoryBound(to: ReaderSlot.self) else { return }
    if let frame = slot.pointee.frame { Unmanaged<AnyObject>.fromOpaque(frame).release() }
    slot.pointee.drainRetired()
    slot.deinitialize(count: 1)
    UnsafeMutableRawPointer(slot).deallocate()
}

/// The calling thread's reader slot, created on first use.
@inlinable
func currentReaderSlot() -> UnsafeMutablePointer<ReaderSlot> {
    if let raw = readerSlots.value { return raw.assumingMemoryBound(to: ReaderSlot.self) }
    return makeReaderSlot()
}

@usableFromInline
func makeReaderSlot() -> UnsafeMutablePointer<ReaderSlot> {
    // NB: every read writes its thread's slot (`borrows`); each slot gets cache lines of its
    // own, so two threads' slots never share one and slow each other's reads down.
    let line = 128
    let size = (MemoryLayout<ReaderSlot>.stride + line - 1) / line * line
    let slot = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: line).bindMemory(to: ReaderSlot.self, capacity: 1)
    slot.initialize(to: ReaderSlot())
    readerSlots.set(UnsafeMutableRawPointer(slot))
    return slot
}
