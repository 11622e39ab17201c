import HeraldBroker
import HeraldWire
import Testing

/// wire.md, "The outgoing queue and slow subscribers", event by event.
struct SlowSubscriberTests {
    /// A NOTIFY for name "n" with a 10-byte payload is 6 + 33 + 1 + 10 = 50 bytes.
    static let frameSize = 50

    @Test func dropsOldestWhenSubscriberQueueIsFullAndReportsTheExactGap() {
        var harness = BrokerHarness(queueBytes: 10 * Self.frameSize)
        let publisher = harness.connect(1)
        let slow = harness.connect(2)
        let fast = harness.connect(3)
        harness.subscribe(slow, 1, "n")
        harness.subscribe(fast, 1, "n")
        _ = harness.output(of: slow)
        _ = harness.output(of: fast)
        var fastSequences: [UInt64] = []
        for _ in 0..<25 {
            harness.post(publisher, "n", "0123456789")
            // The fast subscriber keeps up.
            for case .notify(let notify) in harness.output(of: fast) { fastSequences.append(notify.sequence) }
        }
        #expect(fastSequences == Array(1...25))
        #expect(harness.broker.queuedBytes(slow) <= 10 * Self.frameSize)
        let frames = harness.output(of: slow)
        #expect(frames.first == .dropped(.init(count: 15, firstSequence: 1, lastSequence: 15)))
        let delivered = frames.dropFirst().compactMap { frame -> UInt64? in
            if case .notify(let notify) = frame { return notify.sequence }
            return nil
        }
        #expect(delivered == Array(16...25))
        #expect(harness.broker.statusReport(request: 1).dropped == 15)
    }

    @Test func placesTheNoticeAfterTheFrameInFlight() {
        var harness = BrokerHarness(queueBytes: 3 * Self.frameSize)
        let publisher = harness.connect(1)
        let slow = harness.connect(2)
        harness.subscribe(slow, 1, "n")
        _ = harness.output(of: slow)
        harness.post(publisher, "n", "0123456789")  // 1
        // Write half of frame 1: it is now in flight and cannot be dropped.
        var firstHalf: [UInt8] = []
        harness.broker.pendingOutput(for: slow, maxChunks: 1) { firstHalf.append(contentsOf: $0.prefix(20)) }
        harness.broker.didWrite(20, to: slow)
        for _ in 0..<5 { harness.post(publisher, "n", "0123456789") }  // 2...6
        var decoder = FrameDecoder(role: .client)
        decoder.append(contentsOf: firstHalf)
        var rest: [UInt8] = []
        while harness.broker.hasOutput(slow) {
            var chunk: [UInt8] = []
            harness.broker.pendingOutput(for: slow, maxChunks: 64) { chunk.append(contentsOf: $0) }
            harness.broker.didWrite(chunk.count, to: slow)
            rest += chunk
        }
        decoder.append(contentsOf: rest)
        var sequence: [String] = []
        while let frame = try! decoder.next() {
            switch frame {
            case .notify(let notify): sequence.append("\(notify.sequence)")
            case .dropped(let dropped):
                sequence.append("dropped \(dropped.count) \(dropped.firstSequence)-\(dropped.lastSequence)")
            default: sequence.append("\(frame.type)")
            }
        }
        // Frame 1 was in flight; the queue (3 frames) kept 1, and room for 2 more: 5 and 6. 2...4 dropped.
        #expect(sequence == ["1", "dropped 3 2-4", "5", "6"])
    }

    @Test func mergesLaterDropsIntoANoticeThatHasNotStarted() {
        var harness = BrokerHarness(queueBytes: 2 * Self.frameSize)
        let publisher = harness.connect(1)
        let slow = harness.connect(2)
        harness.subscribe(slow, 1, "n")
        _ = harness.output(of: slow)
        for _ in 0..<4 { harness.post(publisher, "n", "0123456789") }  // 1...4: drops 1, 2
        // The owner looks at the output (placing the notice) but the socket takes nothing.
        harness.broker.pendingOutput(for: slow, maxChunks: 64) { _ in }
        // The placed notice (30 bytes) counts against the bound too, so only one frame fits beside it:
        // 5...7 drop 3, 4, 5 and 6.
        for _ in 0..<3 { harness.post(publisher, "n", "0123456789") }
        let frames = harness.output(of: slow)
        #expect(frames.first == .dropped(.init(count: 6, firstSequence: 1, lastSequence: 6)))
        #expect(frames.count == 2)
        #expect(BrokerHarness.notifications(frames) == ["n"])
    }

    @Test func neverDropsControlFrames() {
        var harness = BrokerHarness(queueBytes: 2 * Self.frameSize)
        let id = harness.connect(1)
        harness.subscribe(id, 1, "n")
        for request in UInt32(1)...5 {
            harness.post(id, "n", "0123456789", request: request)
        }
        let frames = harness.output(of: id)
        let acks = frames.filter { if case .ack = $0 { return true } else { return false } }
        #expect(acks.count == 6)  // the subscription's and five posts'
        #expect(frames.contains { if case .dropped = $0 { return true } else { return false } })
    }

    @Test func stopsReadingAConnectionWhoseUnreadAnswersExceedTheBound() {
        var harness = BrokerHarness(queueBytes: 100)
        let id = harness.connect(1)
        var pings: UInt32 = 0
        while harness.broker.wantsInput(id) {
            pings += 1
            harness.send(.ping(.init(request: pings)), from: id)
        }
        #expect(pings == 6)  // an ACK is 18 bytes: 6 of them pass 100
        _ = harness.output(of: id)
        #expect(harness.broker.wantsInput(id))
    }
}

struct UrgentOutputTests {
    @Test func asksForAWriteOfAConnectionWhoseQueuePassesHalfItsBoundOnce() {
        var harness = BrokerHarness(queueBytes: 4 * SlowSubscriberTests.frameSize)
        let publisher = harness.connect(1)
        let subscriber = harness.connect(2)
        harness.subscribe(subscriber, 1, "n")
        _ = harness.output(of: subscriber)
        #expect(harness.post(publisher, "n", "0123456789").writes.isEmpty)
        #expect(harness.post(publisher, "n", "0123456789").writes.isEmpty)  // exactly half: not past it
        #expect(harness.post(publisher, "n", "0123456789").writes == [subscriber])
        #expect(harness.post(publisher, "n", "0123456789").writes.isEmpty, "asked again before its queue drained")
        _ = harness.output(of: subscriber)
        var writes: [ConnectionID] = []
        for _ in 0..<3 { writes += harness.post(publisher, "n", "0123456789").writes }
        #expect(writes == [subscriber], "not asked after draining and filling again")
    }
}
