import HeraldWire

@testable import HeraldBroker

/// The invariants of `FrameRing` and `OutboundQueue`, checked by walking every record and every frame in it: too
/// costly for the daemon's hot path, so the tests check them after each event instead.
extension FrameRing {
    /// What is wrong with the ring, if anything: empty when every invariant of its documentation holds.
    func invariantViolations() -> [String] {
        var problems: [String] = []
        var queued = 0
        var control = 0
        var inArena = 0
        for index in 0..<records.count {
            let record = records[index]
            queued += record.size
            if record.inArena { inArena += record.size }
            if record.isTombstone {
                if record.count != 0 || record.sequence != 0 || record.isOpenNotice {
                    problems.append("tombstone \(index) is \(record)")
                }
                continue
            }
            if !record.isDroppable {
                control += record.size
                if record.count != 1 { problems.append("control record \(index) holds \(record.count) frames") }
            } else if record.isOpenNotice {
                problems.append("live record \(index) is marked as the open notice")
            }
            if record.count > 1 && index < firstUnbegun { problems.append("a run of \(record.count) is in flight") }
            // Every frame of the record, whole and back to back; a run's sequence numbers rise from its own.
            let base = start(of: record)
            var offset = 0
            var frames = 0
            var last: UInt64 = 0
            while offset + FrameLayout.body <= record.size {
                let frame = base + offset
                let size = FrameRing.frameSize(at: frame)
                if record.isDroppable {
                    let type = frame.load(fromByteOffset: FrameLayout.type, as: UInt8.self)
                    let flags = frame.load(fromByteOffset: FrameLayout.flags, as: UInt8.self)
                    if type != FrameType.notify.rawValue || flags != 0 {
                        problems.append("live record \(index) holds a frame of type \(type), flags \(flags)")
                        break
                    }
                    let sequence = FrameRing.notifySequence(at: frame)
                    if frames == 0 && sequence != record.sequence {
                        problems.append("record \(index) says sequence \(record.sequence), its frame \(sequence)")
                    }
                    if frames > 0 && sequence <= last {
                        problems.append("run \(index): sequence \(sequence) after \(last)")
                    }
                    last = sequence
                }
                offset += size
                frames += 1
            }
            if offset != record.size || frames != record.count {
                problems.append(
                    "record \(index): \(frames) frames in \(offset) bytes, says \(record.count) in \(record.size)"
                )
            }
        }
        if queued != queuedBytes { problems.append("records hold \(queued) bytes, queuedBytes says \(queuedBytes)") }
        if control != controlBytes { problems.append("control frames hold \(control), controlBytes \(controlBytes)") }
        if inArena != arenaBytes {
            problems.append("the arena holds \(inArena) queued bytes, arenaBytes \(arenaBytes)")
        }
        if headOffset < 0 || (headOffset > 0 && (records.isEmpty || headOffset >= records[0].size)) {
            problems.append("headOffset \(headOffset) is not inside the first record")
        }
        if store.tail > store.capacity { problems.append("the store's tail \(store.tail) is past \(store.capacity)") }
        return problems
    }
}

extension OutboundQueue {
    /// What is wrong with the queue, its ring included: empty when every invariant holds.
    func invariantViolations() -> [String] {
        var problems = ring.invariantViolations()
        var openNotices = 0
        var tombstones = 0
        for index in 0..<ring.records.count {
            if ring.records[index].isOpenNotice { openNotices += 1 }
            if ring.records[index].isTombstone { tombstones += 1 }
            if policy == .coalesce && ring.records[index].count > 1 { problems.append("a run while coalescing") }
        }
        if openNotices > 1 { problems.append("\(openNotices) open notices") }
        if (openNotices == 1) != (ledger.open != nil) {
            problems.append(
                "\(openNotices) notice records marked open, the ledger's open notice is \(String(describing: ledger.open))"
            )
        }
        if tombstones != coalesce.tombstones {
            problems.append("\(tombstones) tombstones, \(coalesce.tombstones) counted")
        }
        if limit > configuredLimit { problems.append("limit \(limit) above the configured \(configuredLimit)") }
        return problems
    }
}
