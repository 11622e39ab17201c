/// Memory where the broker encodes each live post of a turn once; queues send from it, and copy what they
/// could not send into their own buffers before it is reused (`OutboundQueue.settleArena()`).
///
/// A queue keeps offsets into it, never pointers, so that the owner may hand every queue the same arena: a frame
/// of a turn is encoded once whatever the fan-out. The arena outlives the turn's frames only because
/// `Broker.endTurn()` (or the broker itself, when the arena fills) settles every queue that holds a part of it
/// before the next post is encoded at offset 0.
public final class FrameArena {
    let base: UnsafeMutableRawPointer
    let capacity: Int

    init(capacity: Int) {
        precondition(capacity > 0, "a frame arena needs room for at least one frame")
        base = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
        self.capacity = capacity
    }

    deinit {
        base.deallocate()
    }
}
