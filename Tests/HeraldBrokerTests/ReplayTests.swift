import HeraldBroker
import HeraldWire
import Testing

/// Retained values: their byte bound, and their replay on `SUBSCRIBE`, fed as the subscriber drains, still
/// retained first, then the `ACK`, then live posts, with no gap (wire.md, "Subscriptions and delivery").
struct ReplayTests {
    static let payload = String(repeating: "v", count: 50)

    /// Stores `count` retained values "r.000"... from `publisher`.
    private func store(_ count: Int, in harness: inout BrokerHarness, from publisher: ConnectionID) {
        for index in 0..<count {
            harness.post(publisher, "r." + String(1000 + index).dropFirst(), Self.payload, retain: true)
        }
    }

    private struct Split {
        var beforeAck: [Frame] = []
        var ack: Frame.Ack?
        var afterAck: [Frame] = []
    }

    /// The frames before the ACK of `subscription`, the ACK, and the frames after it.
    private func split(_ frames: [Frame], at subscription: UInt32) -> Split {
        var result = Split()
        for frame in frames {
            if result.ack == nil, case .ack(let ack) = frame, ack.request == subscription {
                result.ack = ack
            } else if result.ack == nil {
                result.beforeAck.append(frame)
            } else {
                result.afterAck.append(frame)
            }
        }
        return result
    }

    @Test func replaysRetainedValuesAsTheSubscriberDrainsAndReadsItOnlyAfterwards() {
        var harness = BrokerHarness(queueBytes: 2000, maxRetained: 1000)
        let publisher = harness.connect(1)
        store(100, in: &harness, from: publisher)
        let subscriber = harness.connect(2)
        harness.subscribe(subscriber, 1, "r.*")
        // Not all 100 at once: about half the queue's bound, and the subscriber is not read meanwhile.
        #expect(harness.broker.queuedBytes(subscriber) <= 1000 + 200)
        #expect(!harness.broker.wantsInput(subscriber))
        let parts = split(harness.output(of: subscriber), at: 1)
        let replayed = parts.beforeAck.compactMap { frame -> Frame.Notify? in
            if case .notify(let notify) = frame { return notify }
            return nil
        }
        #expect(replayed.count == 100)
        #expect(replayed.allSatisfy { $0.retained && $0.subscription == 1 })
        #expect(replayed.map(\.sequence) == Array(1...100))
        #expect(parts.ack == .init(request: 1, sequence: 100))
        #expect(parts.afterAck.isEmpty)
        #expect(harness.broker.wantsInput(subscriber))
    }

    @Test func livePostsDuringAReplayFollowItsAckInPostOrder() {
        var harness = BrokerHarness(queueBytes: 2000, maxRetained: 1000)
        let publisher = harness.connect(1)
        store(100, in: &harness, from: publisher)
        let subscriber = harness.connect(2)
        harness.subscribe(subscriber, 1, "other.*")
        _ = harness.output(of: subscriber)
        harness.subscribe(subscriber, 2, "r.*")
        // While the replay waits for the subscriber: a new name, a new value for a name not replayed yet, and a post
        // for the subscriber's older subscription.
        harness.post(publisher, "r.new", "live")
        harness.post(publisher, "r.050", "newer", retain: true)
        harness.post(publisher, "other.x", "live")
        let parts = split(harness.output(of: subscriber), at: 2)
        let replayed = BrokerHarness.notifications(parts.beforeAck)
        // r.050's old value is not replayed: its newer value comes live, after the ACK, so nothing is seen twice.
        #expect(replayed.count == 99)
        #expect(!replayed.contains("r.050(retained)"))
        #expect(parts.ack == .init(request: 2, sequence: 100))
        let live = parts.afterAck.compactMap { frame -> Frame.Notify? in
            if case .notify(let notify) = frame { return notify }
            return nil
        }
        #expect(live.map(\.name) == ["r.new", "r.050", "other.x"])
        #expect(live.map(\.sequence) == [101, 102, 103])
        #expect(live.allSatisfy { !$0.retained })
    }

    @Test func aReplayKeepsItsPlaceWhenTheLogOfRetainedValuesIsCompacted() {
        var harness = BrokerHarness(queueBytes: 2000, maxRetained: 1000)
        let publisher = harness.connect(1)
        store(100, in: &harness, from: publisher)
        let subscriber = harness.connect(2)
        harness.subscribe(subscriber, 1, "r.*")
        let first = harness.broker.queuedBytes(subscriber)
        #expect(first > 0)
        // 300 values for one other name: 299 stale entries, which the log compacts away meanwhile.
        for _ in 0..<300 { harness.post(publisher, "s.x", Self.payload, retain: true) }
        let parts = split(harness.output(of: subscriber), at: 1)
        let replayed = parts.beforeAck.compactMap { frame -> UInt64? in
            if case .notify(let notify) = frame { return notify.sequence }
            return nil
        }
        #expect(replayed == Array(1...100))
        #expect(parts.ack == .init(request: 1, sequence: 100))
        #expect(parts.afterAck.isEmpty)
    }

    @Test func livePostsHeldDuringAReplayAreBoundedByTheOverflowPolicy() {
        var harness = BrokerHarness(queueBytes: 2000, maxRetained: 1000)
        let publisher = harness.connect(1)
        store(100, in: &harness, from: publisher)
        let subscriber = harness.connect(2)
        harness.subscribe(subscriber, 1, "**")
        for _ in 0..<200 { harness.post(publisher, "live", Self.payload) }
        let parts = split(harness.output(of: subscriber), at: 1)
        #expect(BrokerHarness.notifications(parts.beforeAck).count == 100)
        guard case .dropped(let notice) = parts.afterAck.first else {
            Issue.record("no DROPPED right after the ACK: \(parts.afterAck.prefix(2))")
            return
        }
        let live = parts.afterAck.dropFirst().compactMap { frame -> UInt64? in
            if case .notify(let notify) = frame { return notify.sequence }
            return nil
        }
        // The oldest held posts went, the newest came, with the exact gap and nothing else missing.
        #expect(notice.firstSequence == 101)
        #expect(notice.lastSequence == 100 + notice.count)
        #expect(live == Array((101 + notice.count)...300))
        // What was held fit the queue's bound: a NOTIFY of "live" with 50 bytes is 6 + 33 + 4 + 50 bytes.
        #expect(live.count <= 2000 / (6 + 33 + 4 + 50))
    }

    @Test func heldPostsJoinTheQueueWithinItsBoundWhateverTheReplayLeft() {
        var harness = BrokerHarness(queueBytes: 2000, maxRetained: 1000)
        let publisher = harness.connect(1)
        store(100, in: &harness, from: publisher)
        let subscriber = harness.connect(2)
        harness.subscribe(subscriber, 1, "**")
        for _ in 0..<200 { harness.post(publisher, "live", Self.payload) }
        // The subscriber reads 100 bytes at a time, so the replay ends with part of it still queued.
        var bytes: [UInt8] = []
        var largest = 0
        while harness.broker.hasOutput(subscriber) {
            var chunk: [UInt8] = []
            harness.broker.pendingOutput(for: subscriber, maxChunks: 1) { chunk.append(contentsOf: $0.prefix(100)) }
            harness.broker.didWrite(chunk.count, to: subscriber)
            bytes += chunk
            largest = max(largest, harness.broker.queuedBytes(subscriber))
        }
        // Within the bound, but for the DROPPED notice, which is never dropped.
        #expect(largest <= 2000 + 64)
        var decoder = FrameDecoder(role: .client)
        decoder.append(contentsOf: bytes)
        var frames: [Frame] = []
        while let frame = try! decoder.next() { frames.append(frame) }
        let parts = split(frames, at: 1)
        #expect(BrokerHarness.notifications(parts.beforeAck).count == 100)
        guard case .dropped(let notice) = parts.afterAck.first else {
            Issue.record("no DROPPED right after the ACK: \(parts.afterAck.prefix(2))")
            return
        }
        let live = parts.afterAck.dropFirst().compactMap { frame -> UInt64? in
            if case .notify(let notify) = frame { return notify.sequence }
            return nil
        }
        #expect(notice.firstSequence == 101)
        #expect(live == Array((101 + notice.count)...300))
        #expect(harness.broker.statusReport(request: 1).dropped == notice.count)
    }

    @Test func aDisconnectSubscriberWhoseHeldPostsOverflowGetsSlowConsumer() {
        var harness = BrokerHarness(queueBytes: 2000, maxRetained: 1000)
        let publisher = harness.connect(1)
        store(100, in: &harness, from: publisher)
        let subscriber = harness.connect(2)
        harness.subscribe(subscriber, 1, "**", overflow: .disconnect)
        for _ in 0..<200 { harness.post(publisher, "live", Self.payload) }
        #expect(harness.broker.isClosing(subscriber))
        guard case .error(let error) = harness.output(of: subscriber).last else {
            Issue.record("no final ERROR")
            return
        }
        #expect(error.code == .slowConsumer)
    }

    @Test func refusesARetainedValuePastTheByteBoundAndClearingFreesItsBytes() {
        var harness = BrokerHarness(maxRetained: 1000, maxRetainedBytes: 1000)
        let publisher = harness.connect(1)
        // Each value costs its name and payload: "r.000" and 50 bytes, 55 in all; 18 fit in 1000.
        store(18, in: &harness, from: publisher)
        #expect(harness.broker.statusReport(request: 1).retained == 18)
        let refused = harness.connect(2)
        harness.post(refused, "r.xyz", Self.payload, retain: true, request: 5)
        guard case .error(let error)? = harness.output(of: refused).last else {
            Issue.record("the retained post past the byte bound was accepted")
            return
        }
        #expect(error.code == .tooManyRetainedBytes)
        #expect(error.code.rawValue == 21)
        #expect(error.request == 5)
        #expect(harness.broker.isClosing(refused))
        // A live post of the same size is still fine, and replacing a value by one of the same size too.
        let other = harness.connect(3)
        harness.post(other, "r.xyz", Self.payload, request: 6)
        harness.post(other, "r.000", Self.payload, retain: true, request: 7)
        #expect(harness.output(of: other).count == 2)
        // Clearing a value frees its bytes for a new one.
        harness.post(other, "r.001", "", retain: true, request: 8)
        harness.post(other, "r.xyz", Self.payload, retain: true, request: 9)
        #expect(
            harness.output(of: other) == [.ack(.init(request: 8, sequence: 21)), .ack(.init(request: 9, sequence: 22))]
        )
        #expect(harness.broker.statusReport(request: 1).retained == 18)
    }

    @Test func aRetainedWillPastTheByteBoundIsDeliveredButNotRetained() {
        var harness = BrokerHarness(maxRetained: 1000, maxRetainedBytes: 100)
        let observer = harness.connect(1)
        harness.subscribe(observer, 1, "**")
        let client = harness.connect(2)
        let payload = Array(String(repeating: "w", count: 200).utf8)
        harness.send(
            .will(.init(request: 3, delayMilliseconds: 0, name: "will.big", payload: payload, retain: true)),
            from: client
        )
        harness.broker.connectionClosed(client, monotonicNow: 0)
        _ = harness.output(of: observer)
        harness.broker.postDueWills(monotonicNow: 0, realtimeNow: 1)
        #expect(BrokerHarness.notifications(harness.output(of: observer)) == ["will.big"])
        #expect(harness.broker.statusReport(request: 1).retained == 0)
    }
}
