import HeraldWire

/// Shedding, for the daemon's global bound (`--max-queued-bytes`): the connections that hold the memory give it
/// back, and stay within what they were left until they drain.
extension OutboundQueue {
    /// The memory of the queue's own buffer, as `OutputAccounting` counts it: what the daemon's global bound
    /// charges to this connection.
    public var allocatedBytes: Int { ring.store.capacity }

    /// Drops live frames not yet begun, by the policy, until at most three quarters of `target` bytes are queued,
    /// then moves what is left into a buffer of its size, so the memory goes back to the allocator at once.
    ///
    /// The daemon calls it when the frames queued for all connections pass `--max-queued-bytes`: the
    /// connections that hold the memory give it back. `coalesce` drops superseded frames first, then, like
    /// `dropOldest`, the oldest; `disconnect` drops nothing (the owner disconnects the connection instead).
    /// Each drop is owed to the connection as a `DROPPED` notice, as when the queue itself overflows.
    ///
    /// Until the queue drains, it then stays within `target`: its `limit` is three quarters of it, and its buffer
    /// grows no further than `target` (the quarter left is room for the holes drops leave). Without that, a client
    /// that still does not read would grow its buffer back, doubling, with its next post, and take the daemon over
    /// its global bound again each time.
    ///
    /// - Returns: How many live frames it dropped.
    public mutating func shed(toBytes target: Int) -> Int {
        precondition(target >= 0, "shed to \(target) bytes")
        limit = min(limit, target / 4 * 3)
        ring.store.ceiling = min(ring.store.ceiling ?? target, target)
        let dropped = dropLive(toBytes: limit)
        compact()
        return dropped
    }

    /// Drops live frames not yet begun, by the policy, until at most `target` bytes are queued or no live frame is
    /// left to drop: superseded ones first with `coalesce`, then the oldest; none with `disconnect`. Each drop is
    /// owed as a `DROPPED` notice.
    ///
    /// - Returns: How many live frames it dropped.
    public mutating func dropLive(toBytes target: Int) -> Int {
        guard ring.queuedBytes > target && policy != .disconnect else { return 0 }
        var dropped = 0
        if policy == .coalesce {
            dropped += dropSuperseded(toFit: limit - target)
        }
        return dropped + dropOldest(whileOver: target)
    }

    /// Removes every frame not yet begun, control frames included, and forgets owed drops: the connection is
    /// being disconnected to give its memory back, and only its final `ERROR` will follow the frame in flight.
    public mutating func removeAllButFrameInFlight() {
        guard ring.headOffset > 0 else { return removeAll() }
        ring.removeAllButFrameInFlight()
        ledger.removeAll()
        // The frame in flight is begun, so nothing can supersede it: the index starts empty.
        coalesce.removeAll()
        coalesce.tombstones = 0
        compact()
    }

    /// Moves the queued frames into a buffer just big enough for them, or frees it when nothing is queued.
    private mutating func compact() {
        if ring.records.isEmpty {
            // Not `emptied()`: nothing was read, so the lowered limit stays.
            ring.store.release()
        } else if ring.store.buffer != nil || ring.arenaBytes > 0 {
            ring.relocate(adding: 0, shrinking: true)
        }
    }
}
