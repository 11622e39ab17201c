import HeraldWire

extension Broker {
    /// Whether the frames queued for all connections, as `accounting` counts their buffers, are over
    /// `maxQueuedBytes`: then the owner calls `relieveGlobalBound(disconnecting:)`. Inlinable, as the daemon
    /// asks it after every frame.
    @inlinable
    public var isOverGlobalBound: Bool { accounting.bytes > configuration.bounds.maxQueuedBytes }

    /// Brings the frames queued for all connections back under three quarters of `maxQueuedBytes`, at the
    /// expense of the connections that hold them, largest first, and never of the others.
    ///
    /// Each connection over a fair share (the target divided among the connections holding output) is brought
    /// down to it by its overflow policy: its oldest live frames are dropped (superseded ones first with
    /// `coalesce`), owed to it as a `DROPPED` notice, and its buffer shrinks to what is left. A connection whose
    /// policy is `disconnect`, or that still holds more than its share (frames that are never dropped: answers
    /// and retained values it does not read), is disconnected with `SLOW_CONSUMER`, and what it had queued and
    /// not begun is freed at once. Connections that read their output hold little or nothing, and are neither
    /// touched nor stopped: the global bound never stops the daemon reading (wire.md, "The outgoing queue").
    ///
    /// - Parameter disconnected: Where the connections it disconnected are appended; the owner closes each once
    ///   its `ERROR` is written, or at the close bound.
    /// - Returns: How many live frames it dropped.
    @discardableResult
    public mutating func relieveGlobalBound(disconnecting disconnected: inout [ConnectionID]) -> Int {
        let bound = configuration.bounds.maxQueuedBytes
        guard accounting.bytes > bound else { return 0 }
        let target = bound / 4 * 3
        var holders: [(slot: Int, bytes: Int)] = []
        for slot in mailboxes.indices where mailboxes[slot].phase != .closed {
            let bytes = heldOutputBytes(slot)
            if bytes > 0 { holders.append((slot, bytes)) }
        }
        holders.sort { $0.bytes > $1.bytes }
        let share = target / max(1, holders.count)
        var shed = 0
        for holder in holders {
            guard accounting.bytes > target, holder.bytes > share else { break }
            let id = ConnectionID(holder.slot)
            let closing = mailboxes[holder.slot].phase == .closing
            if mailboxes[holder.slot].queue.policy != .disconnect || closing {
                shed += shedHeldOutput(holder.slot, toBytes: share)
                if heldOutputBytes(holder.slot) <= share {
                    markDirty(id)
                    continue
                }
            }
            if closing {
                // Its final frame is already queued: what it has not begun goes, and it closes at the close bound.
                mailboxes[holder.slot].queue.removeAllButFrameInFlight()
                continue
            }
            disconnectForGlobalBound(id, holding: holder.bytes)
            disconnected.append(id)
        }
        dropped += UInt64(shed)
        return shed
    }

    /// The memory of a connection's queued output: its queue's buffer (and, during a replay of retained
    /// values, that of the live frames held back for after it).
    func heldOutputBytes(_ slot: Int) -> Int {
        mailboxes[slot].queue.allocatedBytes + (connections[slot]?.replay?.held.allocatedBytes ?? 0)
    }

    /// Sheds what the connection's policy allows until its output takes at most `target` bytes: first the live
    /// posts held back during a replay (the newest), then its queue.
    ///
    /// - Returns: How many live frames it dropped.
    private mutating func shedHeldOutput(_ slot: Int, toBytes target: Int) -> Int {
        var shed = 0
        if let replay = connections[slot]?.replay {
            shed += replay.held.shed(toBytes: max(0, target - mailboxes[slot].queue.queuedBytes))
        }
        let room = max(0, target - (connections[slot]?.replay?.held.allocatedBytes ?? 0))
        shed += mailboxes[slot].queue.shed(toBytes: room)
        // A replay is fed as its queue drains: one whose queue was emptied must be fed, or nothing would restart it.
        if mailboxes[slot].isReplaying && mailboxes[slot].queue.isEmpty { feedReplay(ConnectionID(slot)) }
        return shed
    }

    /// Ends a connection that holds more of the queued output than its share and cannot give it back by its policy.
    private mutating func disconnectForGlobalBound(_ id: ConnectionID, holding bytes: Int) {
        mailboxes[id.rawValue].queue.removeAllButFrameInFlight()
        _ = fail(
            id,
            WireError(
                .slowConsumer,
                "this connection read too slowly: the output queued for all connections passed "
                    + "\(configuration.bounds.maxQueuedBytes) bytes, and this connection held \(bytes) bytes of it"
            )
        )
    }
}
