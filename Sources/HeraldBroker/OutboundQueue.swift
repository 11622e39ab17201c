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
/// Layout. A live frame the broker encoded in its arena is queued by reference; a control frame, and
/// at the end of the turn any frame not yet written (`settleArena()`), is copied into the queue's own
/// buffer. Nothing is reference-counted per frame. A small record per frame (where its bytes are, its
/// sequence number) keeps the order and what the policies need; live frames that lie back to back in the
/// arena share one record, a run, which the policies split as they drop or write part of it. A frame
/// partly written is always a record of its own. A dropped frame leaves its bytes behind as a hole
/// that `pendingChunks` skips; when the buffer is full, the frames still queued are copied into a
/// fresh buffer, which is grown only when more than three quarters of it would still be in use. So a
/// queue's memory stays under about three times its bound, and each byte is copied a bounded number
/// of times however long a subscriber stays stopped.
public struct OutboundQueue {
    @usableFromInline
    struct Entry: BitwiseCopyable {
        /// Where the frame's bytes start in `storage` (or the arena).
        var start: Int
        /// The frames' size, headers included.
        var size: Int
        /// The post's sequence number for a live `NOTIFY` (the first one's, for a run); 0 for a control frame.
        var sequence: UInt64
        /// How many frames lie back to back here: 1, or more for a run of live frames from the arena.
        var count: Int = 1
        /// Whether this is the `DROPPED` notice that may still absorb later drops (its counts are
        /// `openNotice`).
        var isOpenNotice: Bool = false
        /// Whether the bytes are in the broker's arena rather than in `storage`.
        var inArena: Bool = false

        var isDroppable: Bool { sequence != 0 }
    }

    /// The bound on queued bytes: wire.md's `--queue-bytes`, or less from the time the daemon's global bound made this
    /// queue shed (`shed(toBytes:)`) until it drains.
    public private(set) var limit: Int
    /// The bound `limit` returns to once the queue drains.
    public let configuredLimit: Int
    /// From the time the queue was shed until it drains, the most its buffer may grow to (see `shed(toBytes:)`).
    private var shedCapacity: Int?
    /// Where the buffer's capacity is counted, for the daemon's global bound.
    private let accounting: OutputAccounting?
    /// The broker's arena, where a turn's live posts are encoded once for every queue.
    private let arena: FrameArena?
    @usableFromInline var entries = Deque<Entry>()
    private var storage: OutputStorage?
    /// Where the next frame's bytes go in `storage`.
    private var tail = 0
    /// Bytes of the first entry already written.
    private var headOffset = 0
    /// Bytes of every queued entry, whole, including the part of the first already written.
    public private(set) var queuedBytes = 0
    /// Bytes of queued control frames, which are never dropped.
    public private(set) var controlBytes = 0
    /// Bytes of queued frames that are still in the arena.
    public private(set) var arenaBytes = 0
    /// Drops not yet turned into a queued notice.
    @usableFromInline var owedNotice: Frame.Dropped?
    /// The counts of the queued notice that has not started, if there is one.
    private var openNotice: Frame.Dropped?
    /// What to do when a live frame does not fit.
    public private(set) var policy: OverflowPolicy = .dropOldest
    /// With `coalesce`: each name's newest queued live frame and the frames a newer one supersedes, so room
    /// is made without a scan of the queue. A frame it drops leaves a tombstone record (size 0) behind.
    var coalesce = CoalesceIndex()

    /// The smallest buffer allocated.
    static let minimumCapacity = 512

    /// Creates an empty queue bounded at `limit` bytes, counting its buffer's capacity in `accounting`.
    public init(limit: Int, accounting: OutputAccounting? = nil, arena: FrameArena? = nil) {
        self.limit = limit
        configuredLimit = limit
        self.accounting = accounting
        self.arena = arena
    }

    /// Whether nothing is waiting to be written. Inlinable, as the daemon asks it of every connection it writes:
    /// called across the module boundary, it cost a copy of the whole queue (~100 instructions).
    @inlinable
    public var isEmpty: Bool { entries.isEmpty && owedNotice == nil }

    /// Whether the queued control frames alone exceed the bound, so the connection's requests should not
    /// be read until it drains.
    @inlinable
    public var isOverControlLimit: Bool { controlBytes > limit }

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
            splitRuns()
        }
        rebuildCoalesceIndex()
    }

    /// Queues a copy of the live `NOTIFY` frame `frame` (whole, header included) with sequence number
    /// `sequence`, making room by the policy if needed.
    public mutating func enqueueLive(_ frame: UnsafeRawBufferPointer, sequence: UInt64) -> LiveOutcome {
        let (outcome, keep) = makeRoom(for: frame, sequence: sequence)
        if keep { append(frame, sequence: sequence) }
        return outcome
    }

    /// Queues the live `NOTIFY` frame of `size` bytes at `offset` in the arena, without copying it, making
    /// room by the policy if needed. It stays there until `settleArena()`.
    public mutating func enqueueLive(arenaOffset offset: Int, size: Int, sequence: UInt64) -> LiveOutcome {
        if queuedBytes + size <= limit && policy != .coalesce {
            // The common case, with nothing to drop or track: no call into the policies.
            precondition(sequence != 0, "a live NOTIFY has a sequence number from 1")
            // Right after the previous live frame in the arena: the run grows, no new record. (Never the
            // frame in flight, which stays a record of its own.)
            if entries.count > 1 || (entries.count == 1 && headOffset == 0) {
                let grown = entries.withLast { previous in
                    guard previous.inArena && previous.isDroppable && previous.start + previous.size == offset else {
                        return false
                    }
                    previous.size += size
                    previous.count += 1
                    return true
                }
                if grown {
                    queuedBytes += size
                    arenaBytes += size
                    return .queued(dropped: 0)
                }
            }
            entries.append(Entry(start: offset, size: size, sequence: sequence, inArena: true))
            queuedBytes += size
            arenaBytes += size
            return .queued(dropped: 0)
        }
        let (outcome, keep) = makeRoom(
            for: UnsafeRawBufferPointer(start: arena!.base + offset, count: size),
            sequence: sequence
        )
        if keep {
            entries.append(Entry(start: offset, size: size, sequence: sequence, inArena: true))
            queuedBytes += size
            arenaBytes += size
        }
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
            let name = Self.nameBytes(frame)
            key = CoalesceIndex.key(ofName: name)
            noteSuperseded(byName: name, key: key)
        }
        if queuedBytes + size <= limit {
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
        var index = headOffset > 0 ? 1 : 0
        while queuedBytes + size > limit && index < entries.count {
            if entries[index].isDroppable {
                dropFirstFrame(at: index)
                dropped += 1
            } else {
                index += 1
            }
        }
        if coalesce.tombstones > 0 { purgeLeadingTombstones() }
        if queuedBytes + size > limit {
            // Only control frames and the frame in flight are left: the new frame is the oldest that
            // can go.
            recordDrop(sequence)
            return (.queued(dropped: dropped + 1), false)
        }
        if policy == .coalesce { rememberNewest(sequence, key: key) }
        return (.queued(dropped: dropped), true)
    }

    /// Copies the queued frames still in the arena into the queue's own buffer, so the arena can be
    /// reused. A queue that wrote everything has nothing to copy.
    public mutating func settleArena() {
        guard arenaBytes > 0 else { return }
        guard isKnownUniquelyReferenced(&storage), tail + arenaBytes <= storage!.capacity else {
            relocate(adding: 0)
            return
        }
        let base = storage!.base
        let arenaBase = arena!.base
        for index in 0..<entries.count where entries[index].inArena {
            let entry = entries[index]
            (base + tail).copyMemory(from: arenaBase + entry.start, byteCount: entry.size)
            entries[index].start = tail
            entries[index].inArena = false
            tail += entry.size
        }
        arenaBytes = 0
    }

    /// Queues a control frame. Control frames are never dropped.
    public mutating func enqueueControl(_ frame: Frame) {
        let size = frame.encodedSize
        let start = reserve(size)
        frame.encode(to: UnsafeMutableRawBufferPointer(start: storage!.base + start, count: size))
        entries.append(Entry(start: start, size: size, sequence: 0))
        queuedBytes += size
        controlBytes += size
    }

    private mutating func append(_ frame: UnsafeRawBufferPointer, sequence: UInt64) {
        let start = reserve(frame.count)
        (storage!.base + start).copyMemory(from: frame.baseAddress!, byteCount: frame.count)
        entries.append(Entry(start: start, size: frame.count, sequence: sequence))
        queuedBytes += frame.count
    }

    /// Drops live frames that a newer queued frame of the same name supersedes, oldest first, until
    /// `size` more bytes fit or none is left. Returns how many it dropped.
    ///
    /// Each is found from `coalesce` and replaced by a tombstone, so nothing is scanned or shifted.
    private mutating func dropSuperseded(toFit size: Int) -> Int {
        var dropped = 0
        while queuedBytes + size > limit, let slot = coalesce.popOldestSuperseded() {
            guard let index = position(of: slot) else { continue }  // written or dropped since
            let entry = entries[index]
            queuedBytes -= entry.size
            if entry.inArena { arenaBytes -= entry.size }
            recordDrop(entry.sequence)
            // Where the frame was, so that its (empty) bytes have a valid address wherever the queue looks.
            entries[index] = Entry(start: entry.start, size: 0, sequence: 0, count: 0, inArena: entry.inArena)
            coalesce.tombstones += 1
            dropped += 1
        }
        return dropped
    }

    /// Tombstones and stale heap entries would otherwise grow with posts while the subscriber is stuck: compacting
    /// once they are half the records keeps the work per post O(1) amortized. Done before a new frame is looked at,
    /// so that what it supersedes is noted in the rebuilt index.
    private mutating func compactIfNeeded() {
        let manyTombstones = coalesce.tombstones > 64 && coalesce.tombstones * 2 > entries.count
        guard manyTombstones || coalesce.supersededCount > 2 * entries.count + 64 else { return }
        coalesce.compactions += 1
        rebuildCoalesceIndex()
    }

    /// Where the frame at `slot` is now, if it is still queued and not begun.
    private mutating func position(of slot: CoalesceIndex.Slot) -> Int? {
        coalesce.examined += 1
        let first = headOffset > 0 ? 1 : 0
        let index = slot.ordinal &- entries.firstOrdinal
        if index >= first && index < entries.count && entries[index].sequence == slot.sequence { return index }
        // A record's ordinal changes only when it is the one at index 0 and a record behind it is removed or a
        // notice inserted (`Deque.remove(at:)`, `insert(_:at:)`).
        if first == 0 && !entries.isEmpty && entries[0].sequence == slot.sequence { return 0 }
        return nil
    }

    /// A live frame named `name` is about to be queued: the queued frame it supersedes, if any, may now go.
    private mutating func noteSuperseded(byName name: UnsafeRawBufferPointer, key: Int) {
        guard let previous = coalesce.newest(for: key), let index = position(of: previous),
            Bytes.equal(Self.nameBytes(bytes(of: entries[index])), name)
        else { return }
        coalesce.pushSuperseded(previous)
    }

    /// The live frame `sequence`, of the name `key`, is about to be appended.
    private mutating func rememberNewest(_ sequence: UInt64, key: Int) {
        coalesce.setNewest(.init(sequence: sequence, ordinal: entries.firstOrdinal &+ entries.count), for: key)
    }

    /// Removes the tombstones at the front (behind the frame in flight), so the front is always a frame.
    private mutating func purgeLeadingTombstones() {
        let first = headOffset > 0 ? 1 : 0
        while first < entries.count && entries[first].size == 0 {
            entries.remove(at: first)
            coalesce.tombstones -= 1
        }
    }

    /// Removes every tombstone and indexes the queued frames again, if the policy is `coalesce`: O(queue), after
    /// at least as many drops (or when the policy changes).
    private mutating func rebuildCoalesceIndex() {
        if coalesce.tombstones > 0 {
            var kept = Deque<Entry>()
            for index in 0..<entries.count where entries[index].size > 0 { kept.append(entries[index]) }
            entries = kept
            coalesce.tombstones = 0
        }
        coalesce.removeAll()
        guard policy == .coalesce else { return }
        for index in (headOffset > 0 ? 1 : 0)..<entries.count where entries[index].isDroppable {
            coalesce.examined += 1
            let name = Self.nameBytes(bytes(of: entries[index]))
            let key = CoalesceIndex.key(ofName: name)
            noteSuperseded(byName: name, key: key)
            let slot = CoalesceIndex.Slot(sequence: entries[index].sequence, ordinal: entries.firstOrdinal &+ index)
            coalesce.setNewest(slot, for: key)
        }
    }

    /// Drops the oldest frame of the live record at `index`: the record itself, or the head of its run.
    private mutating func dropFirstFrame(at index: Int) {
        let entry = entries[index]
        guard entry.count > 1 else { return drop(at: index) }
        let first = start(of: entry)
        let size = Self.frameSize(at: first)
        recordDrop(entry.sequence)
        queuedBytes -= size
        if entry.inArena { arenaBytes -= size }
        entries[index].start += size
        entries[index].size -= size
        entries[index].count -= 1
        entries[index].sequence = Self.notifySequence(at: first + size)
    }

    /// Removes a live frame; its bytes stay behind as a hole until the buffer is next compacted.
    private mutating func drop(at index: Int) {
        let entry = entries.remove(at: index)
        queuedBytes -= entry.size
        if entry.inArena { arenaBytes -= entry.size }
        recordDrop(entry.sequence)
        forget(entry)
    }

    /// Keeps `coalesce` to the frames still queued.
    private mutating func forget(_ entry: Entry) {
        guard policy == .coalesce else { return }
        coalesce.forget(sequence: entry.sequence, key: CoalesceIndex.key(ofName: Self.nameBytes(bytes(of: entry))))
    }

    /// Removes every live frame not yet begun, without counting them as drops: the connection is about
    /// to be closed for overflowing.
    public mutating func removeLiveFrames() {
        var index = headOffset > 0 ? 1 : 0
        while index < entries.count {
            if entries[index].isDroppable || entries[index].size == 0 {  // a live frame or a tombstone
                let entry = entries.remove(at: index)
                queuedBytes -= entry.size
                if entry.inArena { arenaBytes -= entry.size }
            } else {
                index += 1
            }
        }
        coalesce.removeAll()
        coalesce.tombstones = 0
        if entries.isEmpty { emptied() }
    }

    private mutating func recordDrop(_ sequence: UInt64) {
        if var owed = owedNotice {
            owed.count += 1
            owed.firstSequence = min(owed.firstSequence, sequence)
            owed.lastSequence = max(owed.lastSequence, sequence)
            owedNotice = owed
        } else {
            owedNotice = Frame.Dropped(count: 1, firstSequence: sequence, lastSequence: sequence)
        }
    }

    /// Turns owed drops into a `DROPPED` entry right after the frame in flight, merging with a notice
    /// already there that has not started.
    private mutating func placeOwedNotice() {
        guard var owed = owedNotice else { return }
        owedNotice = nil
        var position = headOffset > 0 ? 1 : 0
        // Never ahead of a WELCOME not yet begun: a client that pipelined frames after HELLO still reads WELCOME
        // first (wire.md, "Version negotiation").
        if position == 0, !entries.isEmpty, !entries[0].isDroppable, isWelcome(entries[0]) {
            position = 1
        }
        if position < entries.count, entries[position].isOpenNotice, let earlier = openNotice {
            owed.count += earlier.count
            owed.firstSequence = min(owed.firstSequence, earlier.firstSequence)
            owed.lastSequence = max(owed.lastSequence, earlier.lastSequence)
            let old = entries.remove(at: position)
            queuedBytes -= old.size
            controlBytes -= old.size
        }
        let frame = Frame.dropped(owed)
        let size = frame.encodedSize
        let start = reserve(size)
        frame.encode(to: UnsafeMutableRawBufferPointer(start: storage!.base + start, count: size))
        entries.insert(Entry(start: start, size: size, sequence: 0, isOpenNotice: true), at: position)
        openNotice = owed
        queuedBytes += size
        controlBytes += size
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
        guard maxChunks > 0, !entries.isEmpty else { return }
        let base = storage?.base
        let arenaBase = arena?.base
        var offered = 0
        var chunks = 0
        let first = entries[0]
        var runStart = (first.inArena ? arenaBase! : base!) + first.start + headOffset
        var runEnd = (first.inArena ? arenaBase! : base!) + first.start + first.size
        var index = 1
        let count = entries.count
        while index < count && runEnd - runStart + offered < maxBytes {
            let entry = entries[index]
            if entry.size == 0 {  // a tombstone of a coalesced frame
                index += 1
                continue
            }
            let entryStart = (entry.inArena ? arenaBase! : base!) + entry.start
            if entryStart != runEnd {
                body(UnsafeRawBufferPointer(start: runStart, count: runEnd - runStart))
                offered += runEnd - runStart
                chunks += 1
                if chunks == maxChunks || offered >= maxBytes { return }
                runStart = entryStart
            }
            runEnd = entryStart + entry.size
            index += 1
        }
        body(UnsafeRawBufferPointer(start: runStart, count: runEnd - runStart))
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
            precondition(!entries.isEmpty, "wrote \(byteCount) bytes but the queue held fewer")
            let entry = entries[0]
            let left = entry.size - headOffset
            if remaining < left {
                if entry.count > 1 {
                    splitWrittenRun(entry, written: remaining, into: &written)
                    return written
                }
                headOffset += remaining
                if entry.isOpenNotice {  // in flight: no longer mergeable
                    entries[0].isOpenNotice = false
                    openNotice = nil
                }
                return written
            }
            remaining -= left
            headOffset = 0
            entries.removeFirst()
            queuedBytes -= entry.size
            if entry.inArena { arenaBytes -= entry.size }
            if entry.isDroppable {
                if policy == .coalesce { forget(entry) }
                written.notifications += entry.count
            } else {
                controlBytes -= entry.size
                if entry.isOpenNotice { openNotice = nil }
                if entry.size == 0 { coalesce.tombstones -= 1 }
            }
            written.frames += entry.count
        }
        if coalesce.tombstones > 0 { purgeLeadingTombstones() }
        if entries.isEmpty {
            emptied()
        } else if shedCapacity != nil && queuedBytes * 2 <= limit {
            // Shed, but reading again, and down to half what it may hold: it keeps up, whatever it was shed for.
            restoreLimit()
        }
        return written
    }

    /// A write ended inside the run at the front (which had not started: a frame in flight is never part
    /// of a run): its whole frames leave the queue, and the frame the write ended in becomes a record of
    /// its own, in flight, ahead of the rest of the run.
    private mutating func splitWrittenRun(_ run: Entry, written byteCount: Int, into written: inout Written) {
        assert(headOffset == 0, "a run is never in flight")
        let base = start(of: run)
        var consumed = 0
        var frames = 0
        while true {
            let size = Self.frameSize(at: base + consumed)
            if consumed + size > byteCount { break }
            consumed += size
            frames += 1
        }
        queuedBytes -= consumed
        if run.inArena { arenaBytes -= consumed }
        written.frames += frames
        written.notifications += frames
        let headSize = Self.frameSize(at: base + consumed)
        var rest = run
        rest.start += consumed + headSize
        rest.size -= consumed + headSize
        rest.count -= frames + 1
        var head = run
        head.start += consumed
        head.size = headSize
        head.count = 1
        head.sequence = Self.notifySequence(at: base + consumed)
        headOffset = byteCount - consumed
        if rest.count > 0 {
            rest.sequence = Self.notifySequence(at: base + consumed + headSize)
            entries[0] = rest
            entries.prepend(head)
        } else {
            entries[0] = head
        }
    }

    /// Turns every run into records of one frame each.
    private mutating func splitRuns() {
        guard (0..<entries.count).contains(where: { entries[$0].count > 1 }) else { return }
        var split = Deque<Entry>()
        for index in 0..<entries.count {
            let entry = entries[index]
            guard entry.count > 1 else {
                split.append(entry)
                continue
            }
            let base = start(of: entry)
            var offset = 0
            for _ in 0..<entry.count {
                let size = Self.frameSize(at: base + offset)
                var single = entry
                single.start += offset
                single.size = size
                single.count = 1
                single.sequence = Self.notifySequence(at: base + offset)
                split.append(single)
                offset += size
            }
        }
        entries = split
    }

    // MARK: Shedding, for the daemon's global bound

    /// The memory of the queue's own buffer, as `OutputAccounting` counts it: what the daemon's global bound
    /// charges to this connection.
    public var allocatedBytes: Int { storage?.capacity ?? 0 }

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
        limit = min(limit, target / 4 * 3)
        shedCapacity = min(shedCapacity ?? target, target)
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
        guard queuedBytes > target && policy != .disconnect else { return 0 }
        var dropped = 0
        if policy == .coalesce {
            dropped += dropSuperseded(toFit: limit - target)
        }
        var index = headOffset > 0 ? 1 : 0
        while queuedBytes > target && index < entries.count {
            if entries[index].isDroppable {
                dropFirstFrame(at: index)
                dropped += 1
            } else {
                index += 1
            }
        }
        return dropped
    }

    /// Removes every frame not yet begun, control frames included, and forgets owed drops: the connection is
    /// being disconnected to give its memory back, and only its final `ERROR` will follow the frame in flight.
    public mutating func removeAllButFrameInFlight() {
        guard headOffset > 0 else { return removeAll() }
        var inFlight = entries[0]
        inFlight.isOpenNotice = false
        entries.removeAll()
        entries.append(inFlight)
        queuedBytes = inFlight.size
        controlBytes = inFlight.isDroppable ? 0 : inFlight.size
        arenaBytes = inFlight.inArena ? inFlight.size : 0
        owedNotice = nil
        openNotice = nil
        // The frame in flight is begun, so nothing can supersede it: the index starts empty.
        coalesce.removeAll()
        coalesce.tombstones = 0
        compact()
    }

    // MARK: Frames held back during a replay of retained values

    /// Moves every frame of `other`, a queue never written, behind this queue's frames, in order, `other`'s owed
    /// drops first: they are older than every frame left in it. `other` is left empty.
    ///
    /// The broker holds a connection's live posts in a queue of their own while retained values are replayed to it,
    /// and appends them after the replay and its `ACK` (wire.md: retained first, then live, no gap).
    public mutating func append(contentsOf other: inout OutboundQueue) {
        precondition(other.headOffset == 0, "a queue that was written cannot be appended")
        other.placeOwedNotice()
        for index in 0..<other.entries.count where other.entries[index].size > 0 {  // not `other`'s tombstones
            let entry = other.entries[index]
            if entry.isDroppable && policy == .coalesce {
                // As a live frame queued the usual way: what it supersedes may go, and it is its name's newest.
                compactIfNeeded()
                let name = Self.nameBytes(other.bytes(of: entry))
                let key = CoalesceIndex.key(ofName: name)
                noteSuperseded(byName: name, key: key)
                rememberNewest(entry.sequence, key: key)
            }
            let start = reserve(entry.size)
            (storage!.base + start).copyMemory(from: other.start(of: entry), byteCount: entry.size)
            entries.append(Entry(start: start, size: entry.size, sequence: entry.sequence, count: entry.count))
            queuedBytes += entry.size
            if !entry.isDroppable {
                controlBytes += entry.size
            }
        }
        other.removeAll()
    }

    /// Moves the queued frames into a buffer just big enough for them, or frees it when nothing is queued.
    private mutating func compact() {
        if entries.isEmpty {
            // Not `emptied()`: nothing was read, so the lowered limit stays.
            tail = 0
            storage = nil
        } else if storage != nil || arenaBytes > 0 {
            relocate(adding: 0, shrinking: true)
        }
    }

    /// Drops everything: the connection is gone.
    public mutating func removeAll() {
        entries.removeAll()
        headOffset = 0
        queuedBytes = 0
        controlBytes = 0
        owedNotice = nil
        openNotice = nil
        coalesce.removeAll()
        coalesce.tombstones = 0
        storage = nil
        tail = 0
        arenaBytes = 0
    }

    // MARK: The buffer

    /// The queue holds no frame: its buffer goes back to the allocator rather than sit with an idle
    /// connection. (Live frames usually go out from the arena and never need it; keeping even the smallest
    /// buffer made an idle connection cost 1.45 KiB instead of 0.9.)
    private mutating func emptied() {
        tail = 0
        storage = nil
        // The client read everything: whatever it was shed for, it keeps up now.
        restoreLimit()
    }

    /// Ends what `shed(toBytes:)` set: the queue is bounded by `--queue-bytes` again and its buffer may grow.
    private mutating func restoreLimit() {
        limit = configuredLimit
        shedCapacity = nil
    }

    /// Makes room for `size` bytes at the end of the buffer and returns where they start.
    private mutating func reserve(_ size: Int) -> Int {
        // Uniqueness first: binding `storage` to a local would hold a second reference.
        if isKnownUniquelyReferenced(&storage), tail + size <= storage!.capacity {
            defer { tail += size }
            return tail
        }
        relocate(adding: size)
        defer { tail += size }
        return tail
    }

    /// Copies the queued frames, in order and back to back, into a new buffer with room for `size` more
    /// bytes: the same capacity when at most three quarters of it will then be in use, else twice as
    /// much as needed (with `shrinking`, just big enough: see `shed(toBytes:)`). Also how a copied queue stops
    /// sharing its buffer.
    private mutating func relocate(adding size: Int, shrinking: Bool = false) {
        let needed = queuedBytes + size
        var capacity = Swift.max(Self.minimumCapacity, shrinking ? needed : storage?.capacity ?? 0)
        while !shrinking && needed * 4 > capacity * 3 { capacity *= 2 }
        if let ceiling = shedCapacity {
            capacity = Swift.max(needed, Swift.min(capacity, ceiling))
        }
        let fresh = OutputStorage(capacity: capacity, accounting: accounting)
        var offset = 0
        for index in 0..<entries.count {
            let entry = entries[index]
            (fresh.base + offset).copyMemory(from: start(of: entry), byteCount: entry.size)
            entries[index].start = offset
            entries[index].inArena = false
            offset += entry.size
        }
        storage = fresh
        tail = offset
        arenaBytes = 0
    }

    /// Where a queued entry's bytes are.
    private func start(of entry: Entry) -> UnsafeMutableRawPointer {
        (entry.inArena ? arena!.base : storage!.base) + entry.start
    }

    /// The bytes of a queued entry.
    private func bytes(of entry: Entry) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: start(of: entry), count: entry.size)
    }

    /// Whether a queued control frame is `WELCOME`.
    private func isWelcome(_ entry: Entry) -> Bool {
        start(of: entry).load(fromByteOffset: 4, as: UInt8.self) == FrameType.welcome.rawValue
    }

    /// The size of the frame at `pointer`, header included.
    private static func frameSize(at pointer: UnsafeRawPointer) -> Int {
        4 + Int(UInt32(littleEndian: pointer.loadUnaligned(as: UInt32.self)))
    }

    /// The sequence number of the `NOTIFY` frame at `pointer`.
    private static func notifySequence(at pointer: UnsafeRawPointer) -> UInt64 {
        UInt64(littleEndian: pointer.loadUnaligned(fromByteOffset: frameHeaderSize, as: UInt64.self))
    }

    /// Where a `NOTIFY`'s name length byte is: after the header and the fixed fields.
    private static let notifyNameOffset = frameHeaderSize + Frame.Notify.fixedBodySize - 1

    /// The name bytes of an encoded `NOTIFY` frame, which the broker built from a valid name.
    static func nameBytes(_ frame: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        let count = Int(frame[notifyNameOffset])
        return UnsafeRawBufferPointer(rebasing: frame[notifyNameOffset + 1..<notifyNameOffset + 1 + count])
    }
}

/// The memory one queue's frames are copied into, freed when the queue lets go of it.
final class OutputStorage {
    let base: UnsafeMutableRawPointer
    let capacity: Int
    private let accounting: OutputAccounting?

    init(capacity: Int, accounting: OutputAccounting?) {
        base = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
        self.capacity = capacity
        self.accounting = accounting
        accounting?.add(capacity)
    }

    deinit {
        base.deallocate()
        accounting?.add(-capacity)
    }
}

/// Counts the bytes of every queue's buffer: the daemon's memory for queued output, which
/// `--max-queued-bytes` bounds.
public final class OutputAccounting {
    // Behind a pointer rather than a stored `var`: the broker reads it after every frame, and a class's
    // stored property is checked for exclusive access at run time on every read (~60 instructions a post).
    private let counter = UnsafeMutablePointer<Int>.allocate(capacity: 1)

    /// Bytes of queue buffers allocated now.
    public var bytes: Int { counter.pointee }

    public init() {
        counter.initialize(to: 0)
    }

    deinit {
        counter.deallocate()
    }

    fileprivate func add(_ count: Int) {
        counter.pointee += count
    }
}

/// Memory where the broker encodes each live post of a turn once; queues send from it, and copy what they
/// could not send into their own buffers before it is reused (`OutboundQueue.settleArena()`).
public final class FrameArena {
    let base: UnsafeMutableRawPointer
    let capacity: Int

    init(capacity: Int) {
        base = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
        self.capacity = capacity
    }

    deinit {
        base.deallocate()
    }
}
