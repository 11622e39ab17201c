public import HeraldWire

/// One connection's outgoing frames, bounded in bytes, with wire.md's overflow policies.
///
/// Live `NOTIFY` frames may be dropped to make room, by the connection's policy: oldest first
/// (`dropOldest`), superseded frames of the same name first (`coalesce`), or not at all
/// (`disconnect`, which tells the owner to close the connection). Control frames never are. The
/// queue then owes the connection a `DROPPED` notice with the exact count and sequence range, which
/// it places right after the frame in flight, where the gap is. The queue does no I/O: the owner asks
/// for `pendingChunks` to write and reports what was written with `didWrite`.
public struct OutboundQueue {
    struct Entry {
        let frame: EncodedFrame
        /// The post's sequence number for a live `NOTIFY`; 0 for a control frame.
        let sequence: UInt64
        /// A not-yet-written `DROPPED` notice, which may still absorb later drops.
        var notice: Frame.Dropped?

        var isDroppable: Bool { sequence != 0 }
    }

    /// The bound on queued bytes, wire.md's `--queue-bytes`.
    public let limit: Int
    private var entries = Deque<Entry>()
    /// Bytes of the first entry already written.
    private var headOffset = 0
    /// Bytes of every queued entry, whole, including the part of the first already written.
    public private(set) var queuedBytes = 0
    /// Bytes of queued control frames, which are never dropped.
    public private(set) var controlBytes = 0
    /// Drops not yet turned into a queued notice.
    private var owedNotice: Frame.Dropped?
    /// What to do when a live frame does not fit.
    public private(set) var policy: OverflowPolicy = .dropOldest
    /// With `coalesce`: the sequence number of the newest queued live frame of each name, so a frame
    /// with an older number is known to be superseded.
    private var newest: [String: UInt64] = [:]

    /// Creates an empty queue bounded at `limit` bytes.
    public init(limit: Int) {
        self.limit = limit
    }

    /// Whether nothing is waiting to be written.
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
        newest = [:]
        if policy == .coalesce {
            for index in 0..<entries.count where entries[index].isDroppable {
                if let name = entries[index].frame.name { newest[name] = entries[index].sequence }
            }
        }
    }

    /// Queues a live `NOTIFY` with sequence number `sequence`, making room by the policy if needed.
    public mutating func enqueueLive(_ frame: EncodedFrame, sequence: UInt64) -> LiveOutcome {
        precondition(sequence != 0, "a live NOTIFY has a sequence number from 1")
        let size = frame.bytes.count
        if policy == .disconnect && queuedBytes + size > limit {
            return .overflowed
        }
        if policy == .coalesce, let name = frame.name {
            newest[name] = sequence
        }
        var dropped = 0
        if policy == .coalesce {
            dropped += dropSuperseded(toFit: size)
        }
        var index = headOffset > 0 ? 1 : 0
        while queuedBytes + size > limit && index < entries.count {
            if entries[index].isDroppable {
                drop(at: index)
                dropped += 1
            } else {
                index += 1
            }
        }
        if queuedBytes + size > limit {
            // Only control frames and the frame in flight are left: the new frame is the oldest that
            // can go.
            recordDrop(sequence)
            if policy == .coalesce, let name = frame.name, newest[name] == sequence { newest[name] = nil }
            return .queued(dropped: dropped + 1)
        }
        entries.append(Entry(frame: frame, sequence: sequence, notice: nil))
        queuedBytes += size
        return .queued(dropped: dropped)
    }

    /// Drops live frames that a newer queued frame of the same name supersedes, oldest first, until
    /// `size` more bytes fit or none is left. Returns how many it dropped.
    private mutating func dropSuperseded(toFit size: Int) -> Int {
        var dropped = 0
        var index = headOffset > 0 ? 1 : 0
        while queuedBytes + size > limit && index < entries.count {
            let entry = entries[index]
            if entry.isDroppable, let name = entry.frame.name, let latest = newest[name], latest > entry.sequence {
                drop(at: index)
                dropped += 1
            } else {
                index += 1
            }
        }
        return dropped
    }

    private mutating func drop(at index: Int) {
        let entry = entries.remove(at: index)
        queuedBytes -= entry.frame.bytes.count
        recordDrop(entry.sequence)
        forget(entry)
    }

    /// Keeps `newest` to the frames still queued.
    private mutating func forget(_ entry: Entry) {
        if policy == .coalesce, let name = entry.frame.name, newest[name] == entry.sequence {
            newest[name] = nil
        }
    }

    /// Removes every live frame not yet begun, without counting them as drops: the connection is about
    /// to be closed for overflowing.
    public mutating func removeLiveFrames() {
        var index = headOffset > 0 ? 1 : 0
        while index < entries.count {
            if entries[index].isDroppable {
                let entry = entries.remove(at: index)
                queuedBytes -= entry.frame.bytes.count
            } else {
                index += 1
            }
        }
        newest = [:]
    }

    /// Queues a control frame. Control frames are never dropped.
    public mutating func enqueueControl(_ frame: EncodedFrame) {
        entries.append(Entry(frame: frame, sequence: 0, notice: nil))
        queuedBytes += frame.bytes.count
        controlBytes += frame.bytes.count
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
        let position = headOffset > 0 ? 1 : 0
        if position < entries.count, let earlier = entries[position].notice {
            owed.count += earlier.count
            owed.firstSequence = min(owed.firstSequence, earlier.firstSequence)
            owed.lastSequence = max(owed.lastSequence, earlier.lastSequence)
            let old = entries.remove(at: position)
            queuedBytes -= old.frame.bytes.count
            controlBytes -= old.frame.bytes.count
        }
        let frame = EncodedFrame(.dropped(owed))
        entries.insert(Entry(frame: frame, sequence: 0, notice: owed), at: position)
        queuedBytes += frame.bytes.count
        controlBytes += frame.bytes.count
    }

    /// Calls `body` with the bytes to write next, in order, at most `maxChunks` of them.
    ///
    /// The memory stays valid until the next mutation of the queue.
    public mutating func pendingChunks(maxChunks: Int, _ body: (UnsafeRawBufferPointer) -> Void) {
        placeOwedNotice()
        var index = 0
        while index < entries.count && index < maxChunks {
            let bytes = entries[index].frame.bytes
            body(index == 0 ? UnsafeRawBufferPointer(rebasing: bytes[headOffset...]) : bytes)
            index += 1
        }
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
            let size = entries[0].frame.bytes.count
            let left = size - headOffset
            if remaining < left {
                headOffset += remaining
                if entries[0].notice != nil { entries[0].notice = nil }  // in flight: no longer mergeable
                return written
            }
            remaining -= left
            headOffset = 0
            let entry = entries.removeFirst()
            queuedBytes -= size
            if entry.isDroppable {
                forget(entry)
                written.notifications += 1
            } else {
                controlBytes -= size
            }
            written.frames += 1
        }
        return written
    }

    /// Drops everything: the connection is gone.
    public mutating func removeAll() {
        entries.removeAll()
        headOffset = 0
        queuedBytes = 0
        controlBytes = 0
        owedNotice = nil
        newest = [:]
    }
}
