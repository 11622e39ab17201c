public import HeraldWire

/// One connection's outgoing frames, bounded in bytes, with wire.md's overflow policies.
///
/// Live `NOTIFY` frames may be dropped to make room, by the connection's policy: oldest first
/// (`dropOldest`), superseded frames of the same name first (`coalesce`), or not at all
/// (`disconnect`, which tells the owner to close the connection). Control frames never are. The
/// queue then owes the connection a `DROPPED` notice with the exact count and sequence range, which
/// it places right after the frame in flight, where the gap is. The queue does no I/O: the owner asks
/// for `pendingChunks` to write and reports what was written with `didWrite`.
///
/// The queue is the policy; the frames are kept by the parts it is built on:
/// - `FrameRing`: the records of the frames in order and the byte counts, with runs of live frames shared from the
///   broker's `FrameArena` (`FrameRing+Runs.swift`);
/// - `FrameStore`: the queue's own buffer, with holes where frames were dropped, packed when it fills;
/// - `DropLedger`: the drops owed as `DROPPED` notices;
/// - `CoalesceIndex`: with `coalesce`, which queued frames a newer one supersedes (`OutboundQueue+Coalesce.swift`).
///
/// A live frame the broker encoded in its arena is queued by reference; a control frame, and at the end of the turn
/// any frame not yet written (`settleArena()`), is copied into the queue's own buffer. So a queue's memory stays
/// under about three times its bound, and each byte is copied a bounded number of times however long a subscriber
/// stays stopped.
public struct OutboundQueue {
    /// The bound on queued bytes: wire.md's `--queue-bytes`, or less from the time the daemon's global bound made this
    /// queue shed (`shed(toBytes:)`) until it drains.
    public internal(set) var limit: Int
    /// The bound `limit` returns to once the queue drains.
    public let configuredLimit: Int
    /// The frames, their bytes and their counts.
    @usableFromInline var ring: FrameRing
    /// Drops not yet reported to the connection.
    @usableFromInline var ledger = DropLedger()
    /// What to do when a live frame does not fit.
    public private(set) var policy: OverflowPolicy = .dropOldest
    /// With `coalesce`: each name's newest queued live frame and the frames a newer one supersedes, so room
    /// is made without a scan of the queue. A frame it drops leaves a tombstone record (size 0) behind.
    var coalesce = CoalesceIndex()

    /// The smallest buffer allocated.
    static var minimumCapacity: Int { FrameStore.minimumCapacity }

    /// Creates an empty queue bounded at `limit` bytes, counting its buffer's capacity in `accounting`.
    public init(limit: Int, accounting: OutputAccounting? = nil, arena: FrameArena? = nil) {
        precondition(limit >= 0, "a queue bound of \(limit) bytes")
        self.limit = limit
        configuredLimit = limit
        ring = FrameRing(accounting: accounting, arena: arena)
    }

    /// The frame records, in order: for tests and the fuzzer, which count tombstones.
    var entries: Deque<FrameRing.Record> { ring.records }

    /// Bytes of every queued frame, whole, including the part of the first already written.
    public var queuedBytes: Int { ring.queuedBytes }
    /// Bytes of queued control frames, which are never dropped.
    public var controlBytes: Int { ring.controlBytes }
    /// Bytes of queued frames that are still in the arena.
    public var arenaBytes: Int { ring.arenaBytes }

    /// Whether nothing is waiting to be written. Inlinable, as the daemon asks it of every connection it writes:
    /// called across the module boundary, it cost a copy of the whole queue (~100 instructions).
    @inlinable
    public var isEmpty: Bool { ring.records.isEmpty && ledger.owed == nil }

    /// Whether the queued control frames alone exceed the bound, so the connection's requests should not
    /// be read until it drains.
    @inlinable
    public var isOverControlLimit: Bool { ring.controlBytes > limit }

    /// What happened to a live frame offered to the queue.
    public enum LiveOutcome: Equatable, Sendable {
        /// Queued; `dropped` older live frames were dropped (or coalesced) to make room, or the new one
        /// itself when nothing else could go (counted in `dropped`).
        case queued(dropped: Int)
        /// The frame does not fit and the policy is `disconnect`: the owner closes the connection.
        case overflowed
    }

    /// Changes the overflow policy (the strictest of the connection's live subscriptions).
    public mutating func setPolicy(_ newPolicy: OverflowPolicy) {
        guard newPolicy != policy else { return }
        policy = newPolicy
        if policy == .coalesce {
            // Coalescing looks at frames one by one, by name: no runs while it applies.
            ring.splitRuns()
        }
        rebuildCoalesceIndex()
    }

    /// Queues a copy of the live `NOTIFY` frame `frame` (whole, header included) with sequence number
    /// `sequence`, making room by the policy if needed.
    public mutating func enqueueLive(_ frame: UnsafeRawBufferPointer, sequence: UInt64) -> LiveOutcome {
        let (outcome, keep) = makeRoom(for: frame, sequence: sequence)
        if keep { ring.appendCopy(frame, sequence: sequence) }
        return outcome
    }

    /// Queues the live `NOTIFY` frame of `size` bytes at `offset` in the arena, without copying it, making
    /// room by the policy if needed. It stays there until `settleArena()`.
    public mutating func enqueueLive(arenaOffset offset: Int, size: Int, sequence: UInt64) -> LiveOutcome {
        if ring.queuedBytes + size <= limit && policy != .coalesce {
            // The common case, with nothing to drop or track: no call into the policies. Right after the previous
            // live frame in the arena, the run grows and no record is added.
            precondition(sequence != 0, "a live NOTIFY has a sequence number from 1")
            if !ring.extendRun(arenaOffset: offset, size: size) {
                ring.appendArena(offset: offset, size: size, sequence: sequence)
            }
            return .queued(dropped: 0)
        }
        let (outcome, keep) = makeRoom(
            for: UnsafeRawBufferPointer(start: ring.arena!.base + offset, count: size),
            sequence: sequence
        )
        if keep { ring.appendArena(offset: offset, size: size, sequence: sequence) }
        return outcome
    }

    /// Drops what the policy says must go for a live frame to fit.
    ///
    /// - Returns: What happened, and whether the new frame is to be queued.
    private mutating func makeRoom(
        for frame: UnsafeRawBufferPointer,
        sequence: UInt64
    ) -> (outcome: LiveOutcome, keep: Bool) {
        precondition(sequence != 0, "a live NOTIFY has a sequence number from 1")
        let size = frame.count
        var key = 0
        if policy == .coalesce {
            compactIfNeeded()
            let name = FrameRing.nameBytes(frame)
            key = CoalesceIndex.key(ofName: name)
            noteSuperseded(byName: name, key: key)
        }
        if ring.queuedBytes + size <= limit {
            if policy == .coalesce { rememberNewest(sequence, key: key) }
            return (.queued(dropped: 0), true)
        }
        if policy == .disconnect {
            return (.overflowed, false)
        }
        var dropped = 0
        if policy == .coalesce {
            dropped += dropSuperseded(toFit: size)
        }
        dropped += dropOldest(whileOver: limit - size)
        if coalesce.tombstones > 0 { purgeLeadingTombstones() }
        if ring.queuedBytes + size > limit {
            // Only control frames and the frame in flight are left: the new frame is the oldest that
            // can go.
            ledger.record(sequence)
            return (.queued(dropped: dropped + 1), false)
        }
        if policy == .coalesce { rememberNewest(sequence, key: key) }
        return (.queued(dropped: dropped), true)
    }

    /// Drops the oldest live frames not yet begun, one by one (a run frame by frame), while more than `target` bytes
    /// are queued and one is left.
    ///
    /// - Returns: How many it dropped.
    mutating func dropOldest(whileOver target: Int) -> Int {
        var dropped = 0
        var index = ring.firstUnbegun
        while ring.queuedBytes > target && index < ring.records.count {
            if ring.records[index].isDroppable {
                dropFirstFrame(at: index)
                dropped += 1
            } else {
                index += 1
            }
        }
        return dropped
    }

    /// Drops the oldest frame of the live record at `index`: the record itself, or the head of its run.
    private mutating func dropFirstFrame(at index: Int) {
        guard ring.records[index].count > 1 else { return drop(at: index) }
        ledger.record(ring.dropHeadOfRun(at: index))
    }

    /// Removes a live frame; its bytes stay behind as a hole until the buffer is next compacted.
    private mutating func drop(at index: Int) {
        let record = ring.remove(at: index)
        ledger.record(record.sequence)
        forget(record)
    }

    /// Copies the queued frames still in the arena into the queue's own buffer, so the arena can be
    /// reused. A queue that wrote everything has nothing to copy.
    public mutating func settleArena() {
        ring.settleArena()
    }

    /// Queues a control frame. Control frames are never dropped.
    public mutating func enqueueControl(_ frame: Frame) {
        ring.appendControl(frame)
    }

    /// Removes every live frame not yet begun, without counting them as drops: the connection is about
    /// to be closed for overflowing.
    public mutating func removeLiveFrames() {
        var index = ring.firstUnbegun
        while index < ring.records.count {
            if ring.records[index].isDroppable || ring.records[index].isTombstone {
                ring.remove(at: index)
            } else {
                index += 1
            }
        }
        coalesce.removeAll()
        coalesce.tombstones = 0
        if ring.records.isEmpty { emptied() }
    }

    /// Turns owed drops into a `DROPPED` record right after the frame in flight, merging with a notice
    /// already there that has not started.
    private mutating func placeOwedNotice() {
        guard ledger.owed != nil else { return }
        var position = ring.firstUnbegun
        // Never ahead of a WELCOME not yet begun: a client that pipelined frames after HELLO still reads WELCOME
        // first (wire.md, "Version negotiation").
        if position == 0, !ring.records.isEmpty, ring.isWelcome(ring.records[0]) {
            position = 1
        }
        let merging = position < ring.records.count && ring.records[position].isOpenNotice
        let notice = ledger.takeOwed(mergingOpenNotice: merging)!
        if merging { ring.remove(at: position) }
        ring.insertControl(.dropped(notice), at: position, isOpenNotice: true)
    }

    /// Calls `body` with the bytes to write next, in order: ranges of the queue's buffer, each as long
    /// as the frames in it lie back to back, at most `maxChunks` of them and no more once `maxBytes`
    /// are offered.
    ///
    /// The memory stays valid until the next mutation of the queue.
    public mutating func pendingChunks(
        maxChunks: Int,
        maxBytes: Int = .max,
        _ body: (UnsafeRawBufferPointer) -> Void
    ) {
        placeOwedNotice()
        ring.pendingChunks(maxChunks: maxChunks, maxBytes: maxBytes, body)
    }

    /// What a completed write consumed.
    public struct Written: Equatable {
        /// Whole frames completed.
        public var frames = 0
        /// Live `NOTIFY` frames among them.
        public var notifications = 0
    }

    /// Records that the first `byteCount` bytes of what `pendingChunks` offered were written.
    public mutating func didWrite(_ byteCount: Int) -> Written {
        var remaining = byteCount
        var written = Written()
        while remaining > 0 {
            precondition(!ring.records.isEmpty, "wrote \(byteCount) bytes but the queue held fewer")
            let record = ring.records[0]
            let left = record.size - ring.headOffset
            if remaining < left {
                if record.count > 1 {
                    let frames = ring.splitWrittenRun(written: remaining)
                    written.frames += frames
                    written.notifications += frames
                    return written
                }
                ring.headOffset += remaining
                if record.isOpenNotice {  // in flight: no longer mergeable
                    ring.records[0].isOpenNotice = false
                    ledger.openNoticeStarted()
                }
                return written
            }
            remaining -= left
            ring.removeFirstWritten()
            if record.isDroppable {
                forget(record)
                written.notifications += record.count
            } else {
                if record.isOpenNotice { ledger.openNoticeStarted() }
                if record.isTombstone { coalesce.tombstones -= 1 }
            }
            written.frames += record.count
        }
        if coalesce.tombstones > 0 { purgeLeadingTombstones() }
        if ring.records.isEmpty {
            emptied()
        } else if ring.store.ceiling != nil && ring.queuedBytes * 2 <= limit {
            // Shed, but reading again, and down to half what it may hold: it keeps up, whatever it was shed for.
            restoreLimit()
        }
        return written
    }

    // MARK: Frames held back during a replay of retained values

    /// Moves every frame of `other`, a queue never written, behind this queue's frames, in order, `other`'s owed
    /// drops first: they are older than every frame left in it. `other` is left empty.
    ///
    /// The broker holds a connection's live posts in a queue of their own while retained values are replayed to it,
    /// and appends them after the replay and its `ACK` (wire.md: retained first, then live, no gap).
    public mutating func append(contentsOf other: inout OutboundQueue) {
        precondition(other.ring.headOffset == 0, "a queue that was written cannot be appended")
        other.placeOwedNotice()
        for index in 0..<other.ring.records.count where !other.ring.records[index].isTombstone {
            let record = other.ring.records[index]
            if record.isDroppable && policy == .coalesce {
                // As a live frame queued the usual way: what it supersedes may go, and it is its name's newest.
                compactIfNeeded()
                let name = FrameRing.nameBytes(other.ring.bytes(of: record))
                let key = CoalesceIndex.key(ofName: name)
                noteSuperseded(byName: name, key: key)
                rememberNewest(record.sequence, key: key)
            }
            ring.appendCopy(of: record, from: other.ring)
        }
        other.removeAll()
    }

    /// Drops everything: the connection is gone.
    public mutating func removeAll() {
        ring.removeAll()
        ledger.removeAll()
        coalesce.removeAll()
        coalesce.tombstones = 0
    }

    // MARK: The buffer

    /// The queue holds no frame: its buffer goes back to the allocator rather than sit with an idle
    /// connection. (Live frames usually go out from the arena and never need it; keeping even the smallest
    /// buffer made an idle connection cost 1.45 KiB instead of 0.9.)
    private mutating func emptied() {
        ring.store.release()
        // The client read everything: whatever it was shed for, it keeps up now.
        restoreLimit()
    }

    /// Ends what `shed(toBytes:)` set: the queue is bounded by `--queue-bytes` again and its buffer may grow.
    mutating func restoreLimit() {
        limit = configuredLimit
        ring.store.ceiling = nil
    }
}
