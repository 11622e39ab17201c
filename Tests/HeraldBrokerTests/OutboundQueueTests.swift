import HeraldWire
import Testing

@testable import HeraldBroker

/// The queue's own buffer: frames copied back to back, holes left by drops skipped, the buffer compacted
/// and freed, and copies of a queue kept apart.
struct OutboundQueueTests {
    /// An encoded live NOTIFY for `name` with sequence number `sequence` and `payload` (10 bytes unless told).
    static func notify(_ sequence: UInt64, name: String = "n", payload: [UInt8] = Array("0123456789".utf8)) -> [UInt8] {
        Frame.notify(
            Frame.Notify(sequence: sequence, time: 0, pid: 1, uid: 2, gid: 3, name: name, payload: payload)
        ).encoded()
    }

    static let frameSize = notify(1).count

    /// Offers everything pending, as `(ranges, bytes)`, without writing it.
    static func pending(_ queue: inout OutboundQueue, maxChunks: Int = .max, maxBytes: Int = .max) -> ([Int], [UInt8]) {
        var ranges: [Int] = []
        var bytes: [UInt8] = []
        queue.pendingChunks(maxChunks: maxChunks, maxBytes: maxBytes) { chunk in
            ranges.append(chunk.count)
            bytes.append(contentsOf: chunk)
        }
        return (ranges, bytes)
    }

    /// Writes everything and decodes it.
    static func drain(_ queue: inout OutboundQueue) -> [Frame] {
        var decoder = FrameDecoder(role: .client)
        while !queue.isEmpty {
            let (_, bytes) = pending(&queue)
            decoder.append(contentsOf: bytes)
            _ = queue.didWrite(bytes.count)
        }
        var frames: [Frame] = []
        while let frame = try! decoder.next() { frames.append(frame) }
        return frames
    }

    static func sequences(_ frames: [Frame]) -> [UInt64] {
        frames.compactMap { frame in
            if case .notify(let notify) = frame { return notify.sequence }
            return nil
        }
    }

    @Test func framesQueuedTogetherAreOfferedAsOneRange() {
        var queue = OutboundQueue(limit: 1 << 20)
        for sequence in UInt64(1)...50 {
            Self.notify(sequence).withUnsafeBytes {
                #expect(queue.enqueueLive($0, sequence: sequence) == .queued(dropped: 0))
            }
        }
        queue.enqueueControl(.ack(Frame.Ack(request: 7, sequence: 50)))
        let (ranges, _) = Self.pending(&queue)
        #expect(ranges.count == 1)
        #expect(ranges[0] == queue.queuedBytes)
        let frames = Self.drain(&queue)
        #expect(Self.sequences(frames) == Array(1...50))
        #expect(frames.last == .ack(Frame.Ack(request: 7, sequence: 50)))
    }

    @Test func aDropLeavesAHoleThatIsSkipped() {
        // Room for 4 frames; a control frame first keeps the oldest live frame off the front.
        var queue = OutboundQueue(limit: 4 * Self.frameSize + 20)
        queue.enqueueControl(.ack(Frame.Ack(request: 1, sequence: 0)))
        for sequence in UInt64(1)...4 {
            Self.notify(sequence).withUnsafeBytes { _ = queue.enqueueLive($0, sequence: sequence) }
        }
        // Frame 5 pushes out frame 1, which sits between the ACK and frame 2.
        Self.notify(5).withUnsafeBytes { #expect(queue.enqueueLive($0, sequence: 5) == .queued(dropped: 1)) }
        let (ranges, bytes) = Self.pending(&queue)
        #expect(ranges.count >= 2, "the hole splits the output")
        #expect(bytes.count == queue.queuedBytes)
        let frames = Self.drain(&queue)
        // Nothing was in flight, so the notice leads (wire.md), then the ACK, then what is left.
        #expect(
            frames.prefix(2) == [
                .dropped(Frame.Dropped(count: 1, firstSequence: 1, lastSequence: 1)),
                .ack(Frame.Ack(request: 1, sequence: 0)),
            ]
        )
        #expect(Self.sequences(frames) == [2, 3, 4, 5])
    }

    @Test func offersNoMoreThanAskedFor() {
        var queue = OutboundQueue(limit: 1 << 20)
        queue.enqueueControl(.ack(Frame.Ack(request: 1, sequence: 0)))
        for sequence in UInt64(1)...10 {
            Self.notify(sequence).withUnsafeBytes { _ = queue.enqueueLive($0, sequence: sequence) }
        }
        let (ranges, bytes) = Self.pending(&queue, maxBytes: 2 * Self.frameSize)
        #expect(ranges.count == 1)
        #expect(bytes.count >= 2 * Self.frameSize && bytes.count < queue.queuedBytes)
    }

    @Test func aStoppedSubscriberKeepsItsMemoryWithinThreeTimesItsBound() {
        let accounting = OutputAccounting()
        let limit = 100 * Self.frameSize
        var queue = OutboundQueue(limit: limit, accounting: accounting)
        // Half a frame in flight, as when the socket filled mid-frame, so every drop leaves a hole behind it.
        Self.notify(1).withUnsafeBytes { _ = queue.enqueueLive($0, sequence: 1) }
        _ = queue.didWrite(Self.frameSize / 2)
        var peak = 0
        for sequence in UInt64(2)...20_000 {
            Self.notify(sequence).withUnsafeBytes { _ = queue.enqueueLive($0, sequence: sequence) }
            peak = max(peak, accounting.bytes)
        }
        #expect(queue.queuedBytes <= limit)
        #expect(peak <= 3 * limit, "the buffer reached \(peak) bytes for a bound of \(limit)")
        // The rest of frame 1, then the notice for 2...19,900, then the newest frames.
        var queueCopy = queue
        let (_, bytes) = Self.pending(&queueCopy)
        _ = queueCopy.didWrite(Self.frameSize - Self.frameSize / 2)
        var decoder = FrameDecoder(role: .client)
        decoder.append(contentsOf: Self.notify(1).prefix(Self.frameSize / 2))
        decoder.append(contentsOf: bytes)
        var frames: [Frame] = []
        while let frame = try! decoder.next() { frames.append(frame) }
        #expect(Self.sequences(frames).first == 1)
        let kept = Self.sequences(frames).dropFirst()
        #expect(kept.last == 20_000)
        guard case .dropped(let notice) = frames[1] else {
            Issue.record("expected the DROPPED notice right after the frame in flight, got \(frames[1])")
            return
        }
        #expect(notice.count + UInt64(kept.count) == 19_999)
        #expect(notice.firstSequence == 2 && notice.lastSequence == kept.first! - 1)
    }

    @Test func theBufferIsFreedWhenTheQueueEmpties() {
        let accounting = OutputAccounting()
        var queue = OutboundQueue(limit: 1 << 20, accounting: accounting)
        for sequence in UInt64(1)...1_000 {
            Self.notify(sequence).withUnsafeBytes { _ = queue.enqueueLive($0, sequence: sequence) }
        }
        #expect(accounting.bytes >= 1_000 * Self.frameSize)
        #expect(Self.sequences(Self.drain(&queue)) == Array(1...1_000))
        #expect(accounting.bytes == 0)
        queue.enqueueControl(.ack(Frame.Ack(request: 1, sequence: 0)))
        #expect(accounting.bytes > 0)
        queue.removeAll()
        #expect(accounting.bytes == 0)
    }

    @Test func aCopiedQueueDoesNotShareItsBuffer() {
        var queue = OutboundQueue(limit: 1 << 20)
        Self.notify(1).withUnsafeBytes { _ = queue.enqueueLive($0, sequence: 1) }
        var copy = queue
        Self.notify(2).withUnsafeBytes { _ = copy.enqueueLive($0, sequence: 2) }
        Self.notify(3).withUnsafeBytes { _ = queue.enqueueLive($0, sequence: 3) }
        #expect(Self.sequences(Self.drain(&copy)) == [1, 2])
        #expect(Self.sequences(Self.drain(&queue)) == [1, 3])
    }

    @Test func coalesceReadsNamesFromTheBuffer() {
        var queue = OutboundQueue(limit: 3 * Self.frameSize)
        queue.setPolicy(.coalesce)
        let posts: [(UInt64, String)] = [(1, "a"), (2, "b"), (3, "a"), (4, "c")]
        for (sequence, name) in posts {
            Self.notify(sequence, name: name).withUnsafeBytes { _ = queue.enqueueLive($0, sequence: sequence) }
        }
        // Frame 1 ("a") is superseded by 3 and goes first; b, a, c remain.
        let frames = Self.drain(&queue)
        #expect(Self.sequences(frames) == [2, 3, 4])
        #expect(frames.first == .dropped(Frame.Dropped(count: 1, firstSequence: 1, lastSequence: 1)))
    }
}

/// Live frames back to back in the arena share one record; the policies split it frame by frame.
struct OutboundQueueRunTests {
    /// A queue and an arena holding `count` NOTIFY frames (sequences 1...count), all queued by reference.
    static func queueWithRun(_ count: Int, limit: Int) -> (OutboundQueue, FrameArena) {
        let arena = FrameArena(capacity: 1 << 16)
        var queue = OutboundQueue(limit: limit, arena: arena)
        var offset = 0
        for sequence in UInt64(1)...UInt64(count) {
            let frame = OutboundQueueTests.notify(sequence)
            frame.withUnsafeBytes { (arena.base + offset).copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
            _ = queue.enqueueLive(arenaOffset: offset, size: frame.count, sequence: sequence)
            offset += frame.count
        }
        return (queue, arena)
    }

    static func append(
        _ sequence: UInt64,
        to queue: inout OutboundQueue,
        in arena: FrameArena,
        at offset: Int
    ) -> OutboundQueue.LiveOutcome {
        let frame = OutboundQueueTests.notify(sequence)
        frame.withUnsafeBytes { (arena.base + offset).copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
        return queue.enqueueLive(arenaOffset: offset, size: frame.count, sequence: sequence)
    }

    @Test func dropsFromTheHeadOfARunWithExactSequences() {
        let size = OutboundQueueTests.frameSize
        var (queue, arena) = Self.queueWithRun(5, limit: 5 * size)
        #expect(Self.append(6, to: &queue, in: arena, at: 5 * size) == .queued(dropped: 1))
        #expect(Self.append(7, to: &queue, in: arena, at: 6 * size) == .queued(dropped: 1))
        let frames = OutboundQueueTests.drain(&queue)
        #expect(frames.first == .dropped(Frame.Dropped(count: 2, firstSequence: 1, lastSequence: 2)))
        #expect(OutboundQueueTests.sequences(frames) == [3, 4, 5, 6, 7])
    }

    @Test func aWriteEndingInsideARunLeavesTheRestWhole() {
        let size = OutboundQueueTests.frameSize
        var (queue, arena) = Self.queueWithRun(6, limit: 1 << 20)
        let (ranges, _) = OutboundQueueTests.pending(&queue)
        #expect(ranges == [6 * size], "one run, one range")
        // Two frames and a half: frame 3 is in flight and may not be dropped; the notice follows it.
        let written = queue.didWrite(2 * size + size / 2)
        #expect(written.notifications == 2)
        let (_, rest) = OutboundQueueTests.pending(&queue)
        var decoder = FrameDecoder(role: .client)
        decoder.append(contentsOf: OutboundQueueTests.notify(3).prefix(size / 2))
        decoder.append(contentsOf: rest)
        var frames: [Frame] = []
        while let frame = try! decoder.next() { frames.append(frame) }
        #expect(OutboundQueueTests.sequences(frames) == [3, 4, 5, 6])
        // Over the bound now: the oldest frame not begun is 4, not the one in flight.
        var bounded = OutboundQueue(limit: 3 * size + size / 2, arena: arena)
        for sequence in UInt64(1)...3 {
            _ = bounded.enqueueLive(arenaOffset: Int(sequence - 1) * size, size: size, sequence: sequence)
        }
        _ = bounded.didWrite(size / 2)  // frame 1 in flight
        #expect(Self.append(4, to: &bounded, in: arena, at: 3 * size) == .queued(dropped: 1))
        var tail = [UInt8](OutboundQueueTests.notify(1).prefix(size / 2))
        tail += OutboundQueueTests.pending(&bounded).1
        var tailDecoder = FrameDecoder(role: .client)
        tailDecoder.append(contentsOf: tail)
        var tailFrames: [Frame] = []
        while let frame = try! tailDecoder.next() { tailFrames.append(frame) }
        #expect(OutboundQueueTests.sequences(tailFrames) == [1, 3, 4])
        #expect(tailFrames[1] == .dropped(Frame.Dropped(count: 1, firstSequence: 2, lastSequence: 2)))
    }

    @Test func switchingToCoalesceSplitsRunsByName() {
        let size = OutboundQueueTests.frameSize
        var (queue, arena) = Self.queueWithRun(4, limit: 5 * size)
        queue.setPolicy(.coalesce)
        // All are "n": the new frame supersedes every queued one, so the oldest goes first.
        #expect(Self.append(5, to: &queue, in: arena, at: 4 * size) == .queued(dropped: 0))
        #expect(Self.append(6, to: &queue, in: arena, at: 5 * size) == .queued(dropped: 1))
        let frames = OutboundQueueTests.drain(&queue)
        #expect(frames.first == .dropped(Frame.Dropped(count: 1, firstSequence: 1, lastSequence: 1)))
        #expect(OutboundQueueTests.sequences(frames) == [2, 3, 4, 5, 6])
    }
}
