import HeraldWire
import Testing

@testable import HeraldBroker

/// `OutboundQueue.shed(toBytes:)` and `removeAllButFrameInFlight()`: how a queue gives its memory back when the
/// daemon passes its global bound.
struct OutboundQueueSheddingTests {
    @Test func sheddingDropsTheOldestAndShrinksTheBufferToWhatIsLeft() {
        let accounting = OutputAccounting()
        var queue = OutboundQueue(limit: 1 << 20, accounting: accounting)
        for sequence in 1...1000 {
            OutboundQueueTests.notify(UInt64(sequence)).withUnsafeBytes {
                _ = queue.enqueueLive($0, sequence: UInt64(sequence))
            }
        }
        let size = OutboundQueueTests.frameSize
        #expect(accounting.bytes >= 1000 * size)
        // To three quarters of the target: 30 frames of the 40 the target would hold.
        let dropped = queue.shed(toBytes: 40 * size)
        #expect(dropped == 970)
        #expect(queue.queuedBytes == 30 * size)
        #expect(queue.allocatedBytes == accounting.bytes)
        #expect(accounting.bytes <= 40 * size)
        let frames = OutboundQueueTests.drain(&queue)
        #expect(frames.first == .dropped(.init(count: 970, firstSequence: 1, lastSequence: 970)))
        #expect(frames.count == 31)
        #expect(accounting.bytes == 0)
    }

    @Test func aShedQueueKeepsALowerLimitAndItsMemoryWithinTheTargetUntilItDrains() {
        let accounting = OutputAccounting()
        var queue = OutboundQueue(limit: 1 << 20, accounting: accounting)
        func enqueue(_ sequences: ClosedRange<Int>) {
            for sequence in sequences {
                OutboundQueueTests.notify(UInt64(sequence)).withUnsafeBytes {
                    _ = queue.enqueueLive($0, sequence: UInt64(sequence))
                }
            }
        }
        enqueue(1...1000)
        _ = queue.shed(toBytes: 8000)
        #expect(queue.limit == 6000)
        var largest = 0
        for round in 0..<100 {
            enqueue((1001 + round * 100)...(1000 + (round + 1) * 100))
            largest = max(largest, accounting.bytes)
            #expect(queue.queuedBytes <= 8000)
        }
        // The client never read: its memory stays within what it was shed to, post after post.
        #expect(largest <= 8000)
        _ = OutboundQueueTests.drain(&queue)
        #expect(queue.limit == 1 << 20)
    }

    @Test func aShedQueueGetsItsLimitBackOnceItsClientReadsItDownToHalf() {
        var queue = OutboundQueue(limit: 1 << 20, accounting: OutputAccounting())
        for sequence in 1...1000 {
            OutboundQueueTests.notify(UInt64(sequence)).withUnsafeBytes {
                _ = queue.enqueueLive($0, sequence: UInt64(sequence))
            }
        }
        _ = queue.shed(toBytes: 40 * OutboundQueueTests.frameSize)
        #expect(queue.limit == 30 * OutboundQueueTests.frameSize)
        // The DROPPED notice (30 bytes) and 14 frames are written: 16 are left, over half of 30.
        queue.pendingChunks(maxChunks: 64) { _ in }
        _ = queue.didWrite(30 + 14 * OutboundQueueTests.frameSize)
        #expect(queue.limit == 30 * OutboundQueueTests.frameSize)
        // One more, and it is down to half: the client keeps up.
        _ = queue.didWrite(OutboundQueueTests.frameSize)
        #expect(queue.limit == 1 << 20)
    }

    @Test func sheddingKeepsControlFramesAndTheFrameInFlight() {
        let accounting = OutputAccounting()
        var queue = OutboundQueue(limit: 1 << 20, accounting: accounting)
        OutboundQueueTests.notify(1).withUnsafeBytes { _ = queue.enqueueLive($0, sequence: 1) }
        _ = queue.didWrite(5)  // frame 1 is in flight
        queue.enqueueControl(.ack(.init(request: 9, sequence: 1)))
        for sequence in 2...5 {
            OutboundQueueTests.notify(UInt64(sequence)).withUnsafeBytes {
                _ = queue.enqueueLive($0, sequence: UInt64(sequence))
            }
        }
        #expect(queue.shed(toBytes: 0) == 4)
        var bytes = OutboundQueueTests.notify(1).prefix(5).map { $0 }
        while !queue.isEmpty {
            var chunk: [UInt8] = []
            queue.pendingChunks(maxChunks: 64) { chunk.append(contentsOf: $0) }
            _ = queue.didWrite(chunk.count)
            bytes += chunk
        }
        var decoder = FrameDecoder(role: .client)
        decoder.append(contentsOf: bytes)
        var frames: [Frame] = []
        while let frame = try! decoder.next() { frames.append(frame) }
        #expect(frames.count == 3)
        #expect(frames[1] == .dropped(.init(count: 4, firstSequence: 2, lastSequence: 5)))
        #expect(frames[2] == .ack(.init(request: 9, sequence: 1)))
    }

    @Test func aDisconnectedQueueKeepsOnlyTheFrameInFlight() {
        let accounting = OutputAccounting()
        var queue = OutboundQueue(limit: 1 << 20, accounting: accounting)
        for sequence in 1...100 {
            OutboundQueueTests.notify(UInt64(sequence)).withUnsafeBytes {
                _ = queue.enqueueLive($0, sequence: UInt64(sequence))
            }
            queue.enqueueControl(.ack(.init(request: 9, sequence: 1)))
        }
        _ = queue.didWrite(5)
        queue.removeAllButFrameInFlight()
        #expect(queue.queuedBytes == OutboundQueueTests.frameSize)
        #expect(queue.controlBytes == 0)
        #expect(accounting.bytes <= OutboundQueue.minimumCapacity)
        _ = queue.didWrite(OutboundQueueTests.frameSize - 5)
        #expect(queue.isEmpty)
        #expect(accounting.bytes == 0)
    }
}
