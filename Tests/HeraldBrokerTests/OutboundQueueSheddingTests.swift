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
        let dropped = queue.shed(toBytes: 10 * size)
        #expect(dropped == 990)
        #expect(queue.queuedBytes == 10 * size)
        #expect(queue.allocatedBytes == accounting.bytes)
        #expect(accounting.bytes <= max(OutboundQueue.minimumCapacity, 10 * size))
        let frames = OutboundQueueTests.drain(&queue)
        #expect(frames.first == .dropped(.init(count: 990, firstSequence: 1, lastSequence: 990)))
        #expect(frames.count == 11)
        #expect(accounting.bytes == 0)
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
