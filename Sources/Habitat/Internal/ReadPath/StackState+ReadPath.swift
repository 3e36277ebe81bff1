// How a state's top frame is read: through the calling thread's reader slot, without the lock
// while the top hasn't moved.
extension StackState {
    /// Makes the calling thread's slot hold this state's top frame, and returns it unretained:
    /// the slot owns it.
    @inlinable
    func frame(for slot: UnsafeMutablePointer<ReaderSlot>) -> Unmanaged<Frame<App>> {
        if _slowPath(slot.pointee.address != published.load(ordering: .acquiring)) {
            slot.pointee.replace(with: withGuarded { $0.top })
        }
        return Unmanaged.fromOpaque(slot.pointee.frame.invariantUnwrapped)
    }

    /// Runs `body` on the top frame, borrowed from the calling thread's slot (given too): the
    /// slot keeps the frame alive until `body` returns, even if `body` reads a newer top, so no
    /// other frame can take its address meanwhile.
    @inlinable
    func withTopFrame<R, E: Error>(_ body: (Frame<App>, UnsafeMutablePointer<ReaderSlot>) throws(E) -> R) throws(E) -> R {
        let slot = currentReaderSlot()
        slot.pointee.borrows &+= 1
        defer { slot.pointee.endBorrow() }
        // `_withUnsafeGuaranteedRef` rethrows untyped errors; the `Result` keeps `E`.
        return try frame(for: slot)._withUnsafeGuaranteedRef { frame in
            Result<R, E>(catching: { () throws(E) in try body(frame, slot) })
        }.get()
    }

    /// Moves the calling thread's slot from `old`, a frame a write just took off the stack, to
    /// `new`, the frame that replaced it, if the slot holds `old`.
    ///
    /// NB: a replaced top is usually held by the writing thread's slot alone (the write read it
    /// there); moving the slot on lets the write release it at once.
    @inlinable
    func moveReaderSlot(from old: Frame<App>, to new: Frame<App>) {
        let slot = currentReaderSlot()
        if slot.pointee.frame == Unmanaged.passUnretained(old).toOpaque() { slot.pointee.replace(with: new) }
    }
}
