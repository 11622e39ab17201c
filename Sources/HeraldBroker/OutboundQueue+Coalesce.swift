import HeraldWire

/// The `coalesce` policy: a live frame makes the queued frame of the same name it supersedes the first to go, and
/// finding either costs no scan of the queue (see `CoalesceIndex`).
extension OutboundQueue {
    /// Drops live frames that a newer queued frame of the same name supersedes, oldest first, until
    /// `size` more bytes fit or none is left. Returns how many it dropped.
    ///
    /// Each is found from `coalesce` and replaced by a tombstone, so nothing is scanned or shifted.
    mutating func dropSuperseded(toFit size: Int) -> Int {
        var dropped = 0
        while ring.queuedBytes + size > limit, let slot = coalesce.popOldestSuperseded() {
            guard let index = position(of: slot) else { continue }  // written or dropped since
            let record = ring.records[index]
            precondition(record.count == 1, "a run while coalescing")
            ring.queuedBytes -= record.size
            if record.inArena { ring.arenaBytes -= record.size }
            ledger.record(record.sequence)
            // Where the frame was, so that its (empty) bytes have a valid address wherever the queue looks.
            ring.records[index] = FrameRing.Record(
                start: record.start,
                size: 0,
                sequence: 0,
                count: 0,
                inArena: record.inArena
            )
            coalesce.tombstones += 1
            dropped += 1
        }
        return dropped
    }

    /// Tombstones and stale heap entries would otherwise grow with posts while the subscriber is stuck: compacting
    /// once they are half the records keeps the work per post O(1) amortized. Done before a new frame is looked at,
    /// so that what it supersedes is noted in the rebuilt index.
    mutating func compactIfNeeded() {
        let manyTombstones = coalesce.tombstones > 64 && coalesce.tombstones * 2 > ring.records.count
        guard manyTombstones || coalesce.supersededCount > 2 * ring.records.count + 64 else { return }
        coalesce.compactions += 1
        rebuildCoalesceIndex()
    }

    /// Where the frame at `slot` is now, if it is still queued and not begun.
    private mutating func position(of slot: CoalesceIndex.Slot) -> Int? {
        coalesce.examined += 1
        let first = ring.firstUnbegun
        let index = slot.ordinal &- ring.records.firstOrdinal
        if index >= first && index < ring.records.count && ring.records[index].sequence == slot.sequence {
            return index
        }
        // A record's ordinal changes only when it is the one at index 0 and a record behind it is removed or a
        // notice inserted (`Deque.remove(at:)`, `insert(_:at:)`).
        if first == 0 && !ring.records.isEmpty && ring.records[0].sequence == slot.sequence { return 0 }
        return nil
    }

    /// A live frame named `name` is about to be queued: the queued frame it supersedes, if any, may now go.
    mutating func noteSuperseded(byName name: UnsafeRawBufferPointer, key: Int) {
        guard let previous = coalesce.newest(for: key), let index = position(of: previous),
            Bytes.equal(FrameRing.nameBytes(ring.bytes(of: ring.records[index])), name)
        else { return }
        coalesce.pushSuperseded(previous)
    }

    /// The live frame `sequence`, of the name `key`, is about to be appended.
    mutating func rememberNewest(_ sequence: UInt64, key: Int) {
        let ordinal = ring.records.firstOrdinal &+ ring.records.count
        coalesce.setNewest(.init(sequence: sequence, ordinal: ordinal), for: key)
    }

    /// Removes the tombstones at the front (behind the frame in flight), so the front is always a frame.
    mutating func purgeLeadingTombstones() {
        let first = ring.firstUnbegun
        while first < ring.records.count && ring.records[first].isTombstone {
            ring.remove(at: first)
            coalesce.tombstones -= 1
        }
        assert(coalesce.tombstones >= 0, "more tombstones purged than counted")
    }

    /// Removes every tombstone and indexes the queued frames again, if the policy is `coalesce`: O(queue), after
    /// at least as many drops (or when the policy changes).
    mutating func rebuildCoalesceIndex() {
        if coalesce.tombstones > 0 {
            var kept = Deque<FrameRing.Record>()
            for index in 0..<ring.records.count where !ring.records[index].isTombstone {
                kept.append(ring.records[index])
            }
            precondition(
                ring.records.count - kept.count == coalesce.tombstones,
                "\(ring.records.count - kept.count) tombstones in the queue, \(coalesce.tombstones) counted"
            )
            ring.records = kept
            coalesce.tombstones = 0
        }
        coalesce.removeAll()
        guard policy == .coalesce else { return }
        for index in ring.firstUnbegun..<ring.records.count where ring.records[index].isDroppable {
            coalesce.examined += 1
            let name = FrameRing.nameBytes(ring.bytes(of: ring.records[index]))
            let key = CoalesceIndex.key(ofName: name)
            noteSuperseded(byName: name, key: key)
            let slot = CoalesceIndex.Slot(
                sequence: ring.records[index].sequence,
                ordinal: ring.records.firstOrdinal &+ index
            )
            coalesce.setNewest(slot, for: key)
        }
    }

    /// Keeps `coalesce` to the frames still queued.
    mutating func forget(_ record: FrameRing.Record) {
        guard policy == .coalesce else { return }
        let key = CoalesceIndex.key(ofName: FrameRing.nameBytes(ring.bytes(of: record)))
        coalesce.forget(sequence: record.sequence, key: key)
    }
}
