import HeraldWire
import Testing

@testable import HeraldBroker

/// The queue driven directly, one event at a time, as the broker drives it (posts encoded into an arena and queued
/// by reference or copied, control frames, partial writes, turns that end, policy changes, shedding), with every
/// invariant of the queue and its ring checked after each event, and the subscriber's stream exact at the end.
struct OutboundQueueEventTests {
    /// An encoded live NOTIFY with `payloadCount` bytes of payload.
    static func notify(_ sequence: UInt64, name: String, payloadCount: Int) -> [UInt8] {
        OutboundQueueTests.notify(
            sequence,
            name: name,
            payload: [UInt8](repeating: UInt8(ascii: "p"), count: payloadCount)
        )
    }

    @Test(arguments: [OverflowPolicy.dropOldest, .coalesce])
    func randomEventsKeepEveryInvariantAndTheStreamExact(policy: OverflowPolicy) {
        var generator = SystemRandomNumberGenerator()
        let seed = UInt64.random(in: .min ... .max, using: &generator)
        var random = SeededRandom(seed: seed)
        let accounting = OutputAccounting()
        let arena = FrameArena(capacity: 1 << 14)
        var arenaUsed = 0
        var queue = OutboundQueue(limit: 1_500, accounting: accounting, arena: arena)
        queue.setPolicy(policy)
        var sequence: UInt64 = 0
        var queued: [UInt64] = []
        var acks: UInt32 = 0
        var written: [UInt8] = []
        for step in 0..<4_000 {
            let event = random.next() % 20
            switch event {
            case 0..<11:
                // A post, encoded once in the arena; a quarter are for other subscribers only, which breaks runs.
                sequence += 1
                let frame = Self.notify(
                    sequence,
                    name: "n.\(random.next() % 3)",
                    payloadCount: Int(random.next() % 40)
                )
                if arenaUsed + frame.count > arena.capacity {
                    queue.settleArena()
                    arenaUsed = 0
                }
                frame.withUnsafeBytes {
                    (arena.base + arenaUsed).copyMemory(from: $0.baseAddress!, byteCount: $0.count)
                }
                if random.next() % 4 != 0 {
                    _ = queue.enqueueLive(arenaOffset: arenaUsed, size: frame.count, sequence: sequence)
                    queued.append(sequence)
                }
                arenaUsed += frame.count
            case 11:
                // A live frame copied in, as the replay's held queue does.
                sequence += 1
                let frame = Self.notify(sequence, name: "n.\(random.next() % 3)", payloadCount: 5)
                frame.withUnsafeBytes { _ = queue.enqueueLive($0, sequence: sequence) }
                queued.append(sequence)
            case 12:
                acks += 1
                queue.enqueueControl(.ack(Frame.Ack(request: acks, sequence: sequence)))
            case 13..<17:
                // A write of any prefix of what is offered, as a socket that takes part of it.
                var offered: [UInt8] = []
                let maxChunks = 1 + Int(random.next() % 4)
                let maxBytes = 1 + Int(random.next() % 2_000)
                queue.pendingChunks(maxChunks: maxChunks, maxBytes: maxBytes) { offered.append(contentsOf: $0) }
                let count = Int(random.next() % UInt64(offered.count + 1))
                written += offered.prefix(count)
                _ = queue.didWrite(count)
            case 17:
                // The turn ends: what was not written leaves the arena, which is reused from its start.
                queue.settleArena()
                arenaUsed = 0
            case 18:
                if random.next() % 8 == 0 { _ = queue.shed(toBytes: 200 + Int(random.next() % 1_500)) }
            default:
                if random.next() % 8 == 0 { queue.setPolicy(queue.policy == .coalesce ? .dropOldest : .coalesce) }
            }
            let problems = queue.invariantViolations()
            #expect(problems.isEmpty, "seed \(seed), step \(step), event \(event): \(problems)")
            if !problems.isEmpty { return }
            #expect(queue.allocatedBytes == accounting.bytes, "seed \(seed), step \(step)")
        }
        while !queue.isEmpty {
            var offered: [UInt8] = []
            queue.pendingChunks(maxChunks: .max) { offered.append(contentsOf: $0) }
            written += offered
            _ = queue.didWrite(offered.count)
            #expect(queue.invariantViolations().isEmpty, "seed \(seed)")
        }
        #expect(accounting.bytes == 0, "seed \(seed): an empty queue holds \(accounting.bytes) bytes")

        var decoder = FrameDecoder(role: .client)
        decoder.append(contentsOf: written)
        var seen: [UInt64] = []
        var notices: [Frame.Dropped] = []
        var ackRequests: [UInt32] = []
        while true {
            let frame: Frame?
            do { frame = try decoder.next() } catch {
                Issue.record("seed \(seed): the stream does not decode: \(error)")
                return
            }
            guard let frame else { break }
            switch frame {
            case .notify(let notify): seen.append(notify.sequence)
            case .dropped(let dropped): notices.append(dropped)
            case .ack(let ack): ackRequests.append(ack.request)
            default: Issue.record("seed \(seed): unexpected \(frame)")
            }
        }
        #expect(decoder.bufferedByteCount == 0, "seed \(seed): the stream ends inside a frame")
        #expect(ackRequests == Array(0..<acks).map { $0 + 1 }, "seed \(seed): control frames are never dropped")
        #expect(seen == seen.sorted() && Set(seen).count == seen.count, "seed \(seed): live frames out of order")
        #expect(Set(seen).isSubset(of: queued), "seed \(seed): a frame that was never queued")
        let droppedCount = notices.reduce(0) { $0 + $1.count }
        #expect(UInt64(seen.count) + droppedCount == UInt64(queued.count), "seed \(seed)")
        let seenSet = Set(seen)
        for missing in queued where !seenSet.contains(missing) {
            #expect(
                notices.contains { $0.firstSequence <= missing && missing <= $0.lastSequence },
                "seed \(seed): \(missing) is missing and no notice covers it"
            )
        }
    }

    /// A subscriber that stopped reading with half a frame written, so every drop leaves a hole: the buffer is packed
    /// again and again, but each byte queued is copied at most three times by it, however long this lasts.
    @Test func aStoppedSubscriberCopiesEachByteABoundedNumberOfTimes() {
        let size = OutboundQueueTests.frameSize
        var queue = OutboundQueue(limit: 100 * size)
        OutboundQueueTests.notify(1).withUnsafeBytes { _ = queue.enqueueLive($0, sequence: 1) }
        _ = queue.didWrite(size / 2)
        var appended = size
        for sequence in UInt64(2)...20_000 {
            OutboundQueueTests.notify(sequence).withUnsafeBytes { _ = queue.enqueueLive($0, sequence: sequence) }
            appended += size
        }
        let relocated = queue.ring.store.relocatedBytes
        #expect(relocated > 0, "the holes were packed away")
        #expect(relocated <= 3 * appended, "\(relocated) bytes copied to pack \(appended) appended")
        #expect(queue.invariantViolations().isEmpty)
    }
}
