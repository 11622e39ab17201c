extension Broker {
    /// Whether anything is queued for the connection.
    @inlinable @inline(__always)
    public func hasOutput(_ id: ConnectionID) -> Bool {
        !mailboxes[id.rawValue].queue.isEmpty
    }

    /// Whether the connection is closing (after an error or `BYE`).
    @inlinable @inline(__always)
    public func isClosing(_ id: ConnectionID) -> Bool {
        mailboxes[id.rawValue].phase == .closing
    }

    /// Bytes queued for the connection.
    public func queuedBytes(_ id: ConnectionID) -> Int {
        mailboxes[id.rawValue].queue.queuedBytes
    }

    /// Moves the connections that got new output since the last call into `ids` (appended, each once).
    ///
    /// The list is handed out rather than walked with a callback, so the owner can write, and so change
    /// the broker, for each of them. Each once really is once: an id that was dirty, closed and reopened
    /// within the turn has two entries in `dirty`, and only the first is handed out (an owner that writes
    /// several connections in one batch would otherwise send the same bytes twice).
    public mutating func takeDirty(into ids: inout [ConnectionID]) {
        for id in dirty where mailboxes[id.rawValue].phase != .closed && mailboxes[id.rawValue].isDirty {
            mailboxes[id.rawValue].isDirty = false
            ids.append(id)
        }
        dirty.removeAll(keepingCapacity: true)
    }

    /// How many connections got new output since the last `takeDirty`.
    @inlinable
    public var dirtyCount: Int { dirty.count }

    /// Whether some connection's queue passed half its bound while frames were processed: the owner
    /// should write those connections now, before the rest of its read batch, so the socket buffer takes
    /// the output before the queue has to drop any of it.
    @inlinable
    public var hasUrgentOutput: Bool { !urgent.isEmpty }

    /// Moves the connections whose queue passed half its bound into `ids` (appended, each once).
    ///
    /// A connection is reported again only after its queue has drained below half: one whose socket is
    /// full waits for writability like any other instead of costing a failed write per post.
    public mutating func takeUrgent(into ids: inout [ConnectionID]) {
        for id in urgent where mailboxes[id.rawValue].phase != .closed {
            ids.append(id)
        }
        urgent.removeAll(keepingCapacity: true)
    }

    /// Calls `body` with the connection's next bytes to write, in order: ranges of its queue's buffer, at most
    /// `maxChunks` of them and none more once `maxBytes` are offered. The memory stays valid until the next
    /// call that changes the broker.
    public mutating func pendingOutput(
        for id: ConnectionID,
        maxChunks: Int,
        maxBytes: Int = .max,
        _ body: (UnsafeRawBufferPointer) -> Void
    ) {
        mailboxes[id.rawValue].queue.pendingChunks(maxChunks: maxChunks, maxBytes: maxBytes, body)
    }

    /// Records that `byteCount` bytes of the connection's pending output were written.
    public mutating func didWrite(_ byteCount: Int, to id: ConnectionID) {
        guard byteCount > 0, mailboxes[id.rawValue].phase != .closed else { return }
        delivered += UInt64(mailboxes[id.rawValue].didWrite(byteCount))
        if mailboxes[id.rawValue].isReplaying { feedReplay(id) }
    }

    /// Ends the owner's turn, after it wrote what it could: frames that were not written are copied out
    /// of the arena into their connections' own buffers, and the arena is reused from its start.
    ///
    /// Call it once per turn of the event loop, after writing. The broker also calls it itself when the
    /// arena fills, so not calling it costs copies, never correctness.
    public mutating func endTurn() {
        for id in arenaHolders where mailboxes[id.rawValue].holdsArena {
            mailboxes[id.rawValue].holdsArena = false
            mailboxes[id.rawValue].queue.settleArena()
        }
        arenaHolders.removeAll(keepingCapacity: true)
        arenaUsed = 0
    }
}
