import HeraldWire

/// Runs: live frames that the broker encoded back to back in its arena and that a queue took one after the other
/// share one record, so a frame that extends a run costs a bounds check and two additions. The policies and writes
/// split a run as they drop or write part of it; a frame partly written is always a record of its own.
extension FrameRing {
    /// Extends the last record by the live frame of `size` bytes at `offset` in the arena, when that record is a
    /// run (or a live frame) in the arena that ends right there and is not in flight.
    ///
    /// - Returns: Whether the frame joined the run; if not, the caller appends a record of its own.
    @inline(__always)
    mutating func extendRun(arenaOffset offset: Int, size: Int) -> Bool {
        // Never the frame in flight, which stays a record of its own.
        guard records.count > 1 || (records.count == 1 && headOffset == 0) else { return false }
        let grown = records.withLast { previous in
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
        }
        return grown
    }

    /// Takes the first frame off the run at `index`, not begun, which holds more than one.
    ///
    /// - Returns: The dropped frame's sequence number.
    mutating func dropHeadOfRun(at index: Int) -> UInt64 {
        let run = records[index]
        precondition(run.count > 1 && index >= firstUnbegun, "not a run, or one in flight")
        let first = start(of: run)
        let size = Self.frameSize(at: first)
        queuedBytes -= size
        if run.inArena { arenaBytes -= size }
        records[index].start += size
        records[index].size -= size
        records[index].count -= 1
        records[index].sequence = Self.notifySequence(at: first + size)
        return run.sequence
    }

    /// A write of `byteCount` bytes ended inside the run at the front (which had not started: a frame in flight is
    /// never part of a run): its whole frames leave the ring, and the frame the write ended in becomes a record of
    /// its own, in flight, ahead of the rest of the run.
    ///
    /// - Returns: How many whole frames the write completed.
    mutating func splitWrittenRun(written byteCount: Int) -> Int {
        let run = records[0]
        precondition(headOffset == 0 && run.count > 1 && byteCount < run.size, "not a run written in part")
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
            records[0] = rest
            records.prepend(head)
        } else {
            records[0] = head
        }
        return frames
    }

    /// Turns every run into records of one frame each.
    mutating func splitRuns() {
        guard (0..<records.count).contains(where: { records[$0].count > 1 }) else { return }
        var split = Deque<Record>()
        for index in 0..<records.count {
            let record = records[index]
            guard record.count > 1 else {
                split.append(record)
                continue
            }
            let base = start(of: record)
            var offset = 0
            for _ in 0..<record.count {
                let size = Self.frameSize(at: base + offset)
                var single = record
                single.start += offset
                single.size = size
                single.count = 1
                single.sequence = Self.notifySequence(at: base + offset)
                split.append(single)
                offset += size
            }
            precondition(offset == record.size, "a run of \(record.count) frames is not \(record.size) bytes")
        }
        records = split
    }

    /// The sequence number of the `NOTIFY` frame at `pointer`.
    static func notifySequence(at pointer: UnsafeRawPointer) -> UInt64 {
        UInt64(littleEndian: pointer.loadUnaligned(fromByteOffset: FrameLayout.Notify.sequence, as: UInt64.self))
    }

    /// The name bytes of an encoded `NOTIFY` frame, which the broker built from a valid name.
    static func nameBytes(_ frame: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        let count = Int(frame[FrameLayout.Notify.nameLength])
        return UnsafeRawBufferPointer(rebasing: frame[FrameLayout.Notify.name..<FrameLayout.Notify.name + count])
    }
}
