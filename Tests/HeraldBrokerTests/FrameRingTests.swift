import HeraldWire
import Testing

@testable import HeraldBroker

/// The records of a queue's frames, event by event: runs of live frames shared from the arena grow, lose their
/// head, split where a write ends and into single frames, leave the arena at the end of the turn; the byte counts
/// follow every change and the bytes offered are the frames in order.
struct FrameRingTests {
    static let size = OutboundQueueTests.frameSize

    /// A ring with `count` live frames (sequences 1...count) back to back in a new arena, queued by reference.
    static func ringWithRun(_ count: Int) -> FrameRing {
        let arena = FrameArena(capacity: 1 << 16)
        var ring = FrameRing(accounting: nil, arena: arena)
        for sequence in 1...count { append(UInt64(sequence), to: &ring, at: (sequence - 1) * size) }
        return ring
    }

    /// Encodes NOTIFY `sequence` at `offset` in the ring's arena and queues it, in the run when it extends one.
    static func append(_ sequence: UInt64, to ring: inout FrameRing, at offset: Int) {
        OutboundQueueTests.notify(sequence).withUnsafeBytes {
            (ring.arena!.base + offset).copyMemory(from: $0.baseAddress!, byteCount: $0.count)
        }
        if !ring.extendRun(arenaOffset: offset, size: size) {
            ring.appendArena(offset: offset, size: size, sequence: sequence)
        }
    }

    /// The sequence numbers of the live frames offered, in order.
    static func offeredSequences(_ ring: FrameRing) -> [UInt64] {
        var bytes: [UInt8] = []
        ring.pendingChunks(maxChunks: .max, maxBytes: .max) { bytes.append(contentsOf: $0) }
        var decoder = FrameDecoder(role: .client)
        decoder.append(contentsOf: bytes)
        var frames: [Frame] = []
        while let frame = try! decoder.next() { frames.append(frame) }
        return OutboundQueueTests.sequences(frames)
    }

    @Test func framesBackToBackInTheArenaShareOneRecord() {
        let ring = Self.ringWithRun(4)
        #expect(ring.records.count == 1)
        #expect(ring.records[0].count == 4 && ring.records[0].sequence == 1)
        #expect(ring.queuedBytes == 4 * Self.size && ring.arenaBytes == 4 * Self.size && ring.controlBytes == 0)
        #expect(Self.offeredSequences(ring) == [1, 2, 3, 4])
        #expect(ring.invariantViolations().isEmpty)
    }

    @Test func aFrameElsewhereInTheArenaStartsARecordOfItsOwn() {
        var ring = Self.ringWithRun(2)
        Self.append(3, to: &ring, at: 5 * Self.size)  // another subscriber's frames lie between
        #expect(ring.records.count == 2)
        Self.append(4, to: &ring, at: 6 * Self.size)
        #expect(ring.records.count == 2 && ring.records[1].count == 2)
        #expect(Self.offeredSequences(ring) == [1, 2, 3, 4])
        #expect(ring.invariantViolations().isEmpty)
    }

    @Test func theFrameInFlightIsNeverExtended() {
        var ring = Self.ringWithRun(1)
        ring.headOffset = 10  // a write ended inside frame 1
        Self.append(2, to: &ring, at: Self.size)
        #expect(ring.records.count == 2, "frame 2 must not join the frame in flight")
        #expect(ring.invariantViolations().isEmpty)
    }

    @Test func droppingTheHeadOfARunKeepsTheRestWithItsSequence() {
        var ring = Self.ringWithRun(3)
        #expect(ring.dropHeadOfRun(at: 0) == 1)
        #expect(ring.records[0].count == 2 && ring.records[0].sequence == 2)
        #expect(ring.queuedBytes == 2 * Self.size && ring.arenaBytes == 2 * Self.size)
        #expect(Self.offeredSequences(ring) == [2, 3])
        #expect(ring.invariantViolations().isEmpty)
    }

    @Test func aWriteEndingInsideARunMakesTheFrameItEndsInARecordInFlight() {
        var ring = Self.ringWithRun(5)
        #expect(ring.splitWrittenRun(written: 2 * Self.size + 7) == 2)
        #expect(ring.records.count == 2)
        #expect(ring.records[0].count == 1 && ring.records[0].sequence == 3 && ring.headOffset == 7)
        #expect(ring.records[1].count == 2 && ring.records[1].sequence == 4)
        #expect(ring.queuedBytes == 3 * Self.size)
        #expect(ring.invariantViolations().isEmpty)
        // Ending in the last frame leaves no rest.
        var last = Self.ringWithRun(2)
        #expect(last.splitWrittenRun(written: Self.size + 1) == 1)
        #expect(last.records.count == 1 && last.records[0].sequence == 2 && last.headOffset == 1)
        #expect(last.invariantViolations().isEmpty)
    }

    @Test func splittingRunsMakesOneRecordPerFrame() {
        var ring = Self.ringWithRun(3)
        Self.append(4, to: &ring, at: 10 * Self.size)
        ring.splitRuns()
        #expect((0..<ring.records.count).map { ring.records[$0].sequence } == [1, 2, 3, 4])
        #expect((0..<ring.records.count).allSatisfy { ring.records[$0].count == 1 })
        #expect(Self.offeredSequences(ring) == [1, 2, 3, 4])
        #expect(ring.invariantViolations().isEmpty)
    }

    @Test func settlingCopiesTheArenasFramesAndTheArenaCanBeOverwritten() {
        var ring = Self.ringWithRun(3)
        ring.appendControl(.ack(Frame.Ack(request: 1, sequence: 3)))
        ring.settleArena()
        #expect(ring.arenaBytes == 0)
        #expect((0..<ring.records.count).allSatisfy { !ring.records[$0].inArena })
        ring.arena!.base.initializeMemory(as: UInt8.self, repeating: 0xEE, count: 4 * Self.size)
        #expect(Self.offeredSequences(ring) == [1, 2, 3])
        #expect(ring.invariantViolations().isEmpty)
    }

    @Test func removingARecordTakesItOutOfEveryCount() {
        var ring = Self.ringWithRun(1)
        ring.appendControl(.ack(Frame.Ack(request: 1, sequence: 1)))
        let ackSize = Frame.ack(Frame.Ack(request: 1, sequence: 1)).encodedSize
        #expect(ring.controlBytes == ackSize && ring.queuedBytes == Self.size + ackSize)
        ring.remove(at: 0)
        #expect(ring.queuedBytes == ackSize && ring.arenaBytes == 0 && ring.controlBytes == ackSize)
        _ = ring.removeFirstWritten()
        #expect(ring.queuedBytes == 0 && ring.controlBytes == 0 && ring.records.isEmpty)
        #expect(ring.invariantViolations().isEmpty)
    }

    @Test func theInvariantCheckSeesACountThatDisagrees() {
        var ring = Self.ringWithRun(2)
        ring.queuedBytes += 1
        #expect(!ring.invariantViolations().isEmpty)
    }

    @Test func aControlFrameCannotGoAheadOfTheFrameInFlight() async {
        await #expect(processExitsWith: .failure) {
            var ring = FrameRingTests.ringWithRun(1)
            ring.headOffset = 1
            ring.insertControl(.ack(Frame.Ack(request: 1, sequence: 1)), at: 0, isOpenNotice: false)
        }
    }
}
