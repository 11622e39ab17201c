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

    /// Calls `body` with the connection's next bytes to write, in order: ranges of its queue's buffer, at most
    /// `maxChunks` of them and none more once `maxBytes` are offered. The memory stays valid until the next
    /// call that changes the broker.
    ///
    /// The one question the owner still asks: after a ``BrokerAction/write(_:)`` (or when the connection's socket
    /// has room), it fetches the bytes here and reports each write with ``didWrite(_:to:)``, then
    /// ``writesDone(on:socketFull:now:into:)``. The bytes are fetched rather than carried in the action so that an
    /// action stays a small value and the owner can gather several connections' ranges into one system call.
    public mutating func pendingOutput(
        for id: ConnectionID,
        maxChunks: Int,
        maxBytes: Int = .max,
        _ body: (UnsafeRawBufferPointer) -> Void
    ) {
        mailboxes[id.rawValue].queue.pendingChunks(maxChunks: maxChunks, maxBytes: maxBytes, body)
    }

    /// Records that `byteCount` bytes of the connection's pending output (``pendingOutput(for:maxChunks:maxBytes:_:)``)
    /// were written. What follows is said by ``writesDone(on:socketFull:now:into:)``, once the owner's writes for now
    /// are done.
    public mutating func didWrite(_ byteCount: Int, to id: ConnectionID) {
        guard byteCount > 0, mailboxes[id.rawValue].phase != .closed else { return }
        delivered += UInt64(mailboxes[id.rawValue].didWrite(byteCount))
        if mailboxes[id.rawValue].isReplaying { feedReplay(id) }
    }

    /// Ends the owner's turn (``turnEnded(into:)``), after it wrote what it could: frames that were not written are
    /// copied out of the arena into their connections' own buffers, and the arena is reused from its start.
    ///
    /// The broker also calls it itself when the arena fills, so a turn that ends late costs copies, never
    /// correctness. Public for tests that end turns without the rest of ``turnEnded(into:)`` (shedding, wake-ups).
    public mutating func endTurn() {
        for id in arenaHolders where mailboxes[id.rawValue].holdsArena {
            mailboxes[id.rawValue].holdsArena = false
            mailboxes[id.rawValue].queue.settleArena()
        }
        arenaHolders.removeAll(keepingCapacity: true)
        arenaUsed = 0
    }
}
