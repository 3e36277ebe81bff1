#if canImport(Darwin)
public import Darwin
#elseif canImport(Glibc)
public import Glibc
#elseif canImport(Musl)
public import Musl
#endif

/// One thread's strong reference to the last frame it read, tagged with that frame's stamp.
///
/// NB: this is what makes reading `current` cost a few nanoseconds on any number of threads.
/// A reader compares the state's stamp with its own slot's; when they match it reads the frame
/// it already holds, so the hot path writes no shared memory: no lock, and no retain on an
/// object other threads are retaining too. Only when the stamp moved does it take the state's
/// lock once to pick up the new top.
///
/// `borrows` counts reads in progress on this thread. A read yields a borrowed environment
/// while the caller uses it; if that caller reads again after the stack changed, the slot
/// must not release the frame still being borrowed, so it parks it in `retired` until the
/// outermost read ends.
@usableFromInline
struct ReaderSlot {
    @usableFromInline var stamp: UInt64 = 0
    @usableFromInline var frame: UnsafeMutableRawPointer?
    @usableFromInline var borrows: Int = 0
    @usableFromInline var retired: [Unmanaged<AnyObject>] = []
    /// `!retired.isEmpty`, kept as a plain flag so the hot path tests one byte.
    @usableFromInline var hasRetired = false
    /// This thread's block of unused stamps: `nextStamp..<stampLimit`.
    ///
    /// NB: a stamp must be unique in the process, but taking each one from a shared atomic
    /// counter cost every push an atomic instruction; a thread takes a block at a time instead.
    @usableFromInline var nextStamp: UInt64 = 0
    @usableFromInline var stampLimit: UInt64 = 0

    @usableFromInline init() {}

    /// Makes `frame` (stamped `stamp`) this thread's cached frame, keeping the previous one
    /// alive while a read is in progress.
    @usableFromInline
    mutating func replace(with frame: AnyObject, stamp: UInt64) {
        let previous = self.frame
        self.frame = Unmanaged.passRetained(frame).toOpaque()
        self.stamp = stamp
        if let previous {
            let old = Unmanaged<AnyObject>.fromOpaque(previous)
            if borrows > 0 {
                retired.append(old)
                hasRetired = true
            } else {
                old.release()
            }
        }
    }

    /// A stamp no other frame in the process has or will have. Never zero.
    @inlinable
    mutating func takeStamp() -> UInt64 {
        if _slowPath(nextStamp == stampLimit) { reserveStamps() }
        defer { nextStamp &+= 1 }
        return nextStamp
    }

    @usableFromInline
    mutating func reserveStamps() {
        let end = stampSource.add(stampBlock)
        nextStamp = end &- stampBlock &+ 1
        stampLimit = end &+ 1
    }

    /// Lets go of the cached frame; the next read takes the top again. Only when no read is in
    /// progress on this thread.
    @inlinable
    mutating func forget() {
        if let frame {
            Unmanaged<AnyObject>.fromOpaque(frame).release()
            self.frame = nil
            stamp = 0
        }
    }

    /// Ends a borrow begun with `borrows &+= 1`.
    @inlinable
    mutating func endBorrow() {
        borrows &-= 1
        if _slowPath(hasRetired) && borrows == 0 { drainRetired() }
    }

    /// Releases the frames parked while reads were in progress.
    @usableFromInline
    mutating func drainRetired() {
        let parked = retired
        retired = []
        hasRetired = false
        for frame in parked { frame.release() }
    }
}

@usableFromInline
let readerSlotKey: pthread_key_t = {
    var key = pthread_key_t()
    let status = pthread_key_create(&key) { raw in
        // Runs when a thread exits: drop the frames it held.
        guard let raw else { return }
        let slot = raw.assumingMemoryBound(to: ReaderSlot.self)
        if let frame = slot.pointee.frame { Unmanaged<AnyObject>.fromOpaque(frame).release() }
        slot.pointee.drainRetired()
        slot.deinitialize(count: 1)
        UnsafeMutableRawPointer(slot).deallocate()
    }
    precondition(status == 0, "pthread_key_create failed with \(status)")
    return key
}()

/// The calling thread's reader slot, created on first use.
@inlinable
func currentReaderSlot() -> UnsafeMutablePointer<ReaderSlot> {
    if let raw = pthread_getspecific(readerSlotKey) {
        return raw.assumingMemoryBound(to: ReaderSlot.self)
    }
    return makeReaderSlot()
}

@usableFromInline
func makeReaderSlot() -> UnsafeMutablePointer<ReaderSlot> {
    // NB: every read writes its thread's slot (`borrows`); each slot gets cache lines of its
    // own, so two threads' slots can never share one and slow each other's reads down.
    let line = 128
    let size = (MemoryLayout<ReaderSlot>.stride + line - 1) / line * line
    let slot = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: line)
        .bindMemory(to: ReaderSlot.self, capacity: 1)
    slot.initialize(to: ReaderSlot())
    let status = pthread_setspecific(readerSlotKey, slot)
    precondition(status == 0, "pthread_setspecific failed with \(status)")
    return slot
}
