import HeraldBroker
import HeraldWire
import Testing

/// wire.md, "The outgoing queue and slow subscribers": past `--max-queued-bytes` the connections that hold the
/// memory give it back, by their policy or by a disconnect, and every other connection goes on as before.
struct GlobalBoundTests {
    static let payload = String(repeating: "p", count: 100)

    /// Posts to "n" until the queued output is over the bound, ending a turn after each post as heraldd does, while
    /// `fast` reads everything it gets.
    private func fill(
        _ harness: inout BrokerHarness,
        from publisher: ConnectionID,
        fast: ConnectionID? = nil,
        fastSequences: inout [UInt64]
    ) {
        var posts = 0
        while !harness.broker.isOverGlobalBound {
            harness.post(publisher, "n", Self.payload)
            if let fast {
                for case .notify(let notify) in harness.output(of: fast) { fastSequences.append(notify.sequence) }
            }
            harness.broker.endTurn()
            posts += 1
            precondition(posts < 100_000, "the bound was never reached")
        }
    }

    private func sequences(_ frames: [Frame]) -> [UInt64] {
        frames.compactMap { frame -> UInt64? in
            if case .notify(let notify) = frame { return notify.sequence }
            return nil
        }
    }

    @Test func shedsTheSlowQueueByItsPolicyAndKeepsReadingEveryone() {
        var harness = BrokerHarness(queueBytes: 1 << 20, maxQueuedBytes: 10_000)
        let publisher = harness.connect(1)
        let slow = harness.connect(2)
        let fast = harness.connect(3)
        harness.subscribe(slow, 1, "n")
        harness.subscribe(fast, 1, "n")
        _ = harness.output(of: slow)
        _ = harness.output(of: fast)
        var fastSequences: [UInt64] = []
        fill(&harness, from: publisher, fast: fast, fastSequences: &fastSequences)
        let last = fastSequences.last!

        var disconnected: [ConnectionID] = []
        let dropped = harness.broker.relieveGlobalBound(disconnecting: &disconnected)
        #expect(disconnected.isEmpty)
        #expect(dropped > 0)
        #expect(harness.broker.accounting.bytes <= 7_500)
        #expect(!harness.broker.isOverGlobalBound)
        // Nobody stops being read: not the publisher, not the healthy subscriber, not even the slow one.
        #expect(harness.broker.wantsInput(publisher))
        #expect(harness.broker.wantsInput(fast))
        #expect(harness.broker.wantsInput(slow))
        #expect(fastSequences == Array(1...last))
        // The slow one learns the exact gap, then gets the newest frames, up to the last, with no other gap.
        let frames = harness.output(of: slow)
        #expect(
            frames.first == .dropped(.init(count: UInt64(dropped), firstSequence: 1, lastSequence: UInt64(dropped)))
        )
        #expect(sequences(frames) == Array(UInt64(dropped + 1)...last))
        #expect(harness.broker.statusReport(request: 1).dropped == UInt64(dropped))
        // And the daemon goes on: a post made now reaches both.
        harness.post(publisher, "n", "after")
        #expect(sequences(harness.output(of: fast)) == [last + 1])
        #expect(sequences(harness.output(of: slow)) == [last + 1])
    }

    @Test func aShedSubscriberThatStillDoesNotReadStaysUnderItsShare() {
        var harness = BrokerHarness(queueBytes: 1 << 20, maxQueuedBytes: 20_000)
        let publisher = harness.connect(1)
        let slow = harness.connect(2)
        harness.subscribe(slow, 1, "n")
        _ = harness.output(of: slow)
        var unused: [UInt64] = []
        fill(&harness, from: publisher, fastSequences: &unused)
        var disconnected: [ConnectionID] = []
        harness.broker.relieveGlobalBound(disconnecting: &disconnected)
        // A thousand more posts: the subscriber's queue stays within its share, so the bound is not reached again.
        for _ in 0..<1000 {
            harness.post(publisher, "n", Self.payload)
            harness.broker.endTurn()
            #expect(!harness.broker.isOverGlobalBound)
        }
        #expect(harness.broker.accounting.bytes <= 15_000)
        let frames = harness.output(of: slow)
        let noticed = frames.reduce(0) { total, frame in
            if case .dropped(let notice) = frame { return total + Int(notice.count) }
            return total
        }
        // Every drop, at the relief and after it, is owed to it exactly.
        #expect(UInt64(noticed) == harness.broker.statusReport(request: 1).dropped)
        #expect(noticed > 0)
        #expect(sequences(frames).last == harness.broker.statusReport(request: 1).posted)
        // It read everything: its queue may hold the whole --queue-bytes again.
        for _ in 0..<100 { harness.post(publisher, "n", Self.payload) }
        #expect(harness.broker.queuedBytes(slow) > 10_000)
    }

    @Test func disconnectsTheLargestHolderWhosePolicyIsDisconnect() {
        var harness = BrokerHarness(queueBytes: 1 << 20, maxQueuedBytes: 10_000)
        let publisher = harness.connect(1)
        let slow = harness.connect(2)
        harness.subscribe(slow, 1, "n", overflow: .disconnect)
        _ = harness.output(of: slow)
        var unused: [UInt64] = []
        fill(&harness, from: publisher, fastSequences: &unused)
        var disconnected: [ConnectionID] = []
        harness.broker.relieveGlobalBound(disconnecting: &disconnected)
        #expect(disconnected == [slow])
        #expect(harness.broker.isClosing(slow))
        #expect(!harness.broker.wantsInput(slow))
        #expect(harness.broker.wantsInput(publisher))
        #expect(harness.broker.accounting.bytes <= 7_500)
        // What it had queued is gone at once; only the reason is left for it.
        let frames = harness.output(of: slow)
        guard frames.count == 1, case .error(let error) = frames[0] else {
            Issue.record("expected only ERROR, got \(frames)")
            return
        }
        #expect(error.code == .slowConsumer)
    }

    @Test func disconnectsAClientThatHoldsUnreadAnswersPastItsShare() throws {
        var harness = BrokerHarness(queueBytes: 1 << 20, maxQueuedBytes: 10_000)
        let greedy = harness.connect(1)
        let healthy = harness.connect(2)
        // STATUS answers are control frames, which are never dropped: the only way to give them back is to go.
        // The broker sheds as soon as a frame takes the output past the bound, before the next frame.
        var requests: UInt32 = 0
        var outcome = harness.send(.status(.init(request: 1)), from: greedy)
        while !outcome.actions.contains(where: { if case .shedOutput = $0 { true } else { false } }) {
            requests += 1
            try #require(requests < 10_000 && outcome.frames == 1, "never shed: \(outcome.actions)")
            outcome = harness.send(.status(.init(request: requests + 1)), from: greedy)
        }
        #expect(outcome.actions.contains(.shedOutput(dropped: 0, disconnected: 1)))
        #expect(outcome.closesConnection)
        #expect(!harness.broker.isOverGlobalBound)
        #expect(harness.broker.accounting.bytes <= 7_500)
        harness.send(.ping(.init(request: 7)), from: healthy)
        #expect(harness.output(of: healthy) == [.ack(.init(request: 7, sequence: 0))])
    }

    @Test func leavesConnectionsUnderTheirShareUntouched() {
        var harness = BrokerHarness(queueBytes: 1 << 20, maxQueuedBytes: 20_000)
        let publisher = harness.connect(1)
        let big = harness.connect(2)
        let small = harness.connect(3)
        harness.subscribe(big, 1, "n")
        harness.subscribe(small, 1, "few")
        _ = harness.output(of: big)
        _ = harness.output(of: small)
        // The small subscriber holds a few frames it has not read yet; the big one holds most of the bound.
        for _ in 0..<3 { harness.post(publisher, "few", Self.payload) }
        harness.broker.endTurn()
        var unused: [UInt64] = []
        fill(&harness, from: publisher, fastSequences: &unused)
        var disconnected: [ConnectionID] = []
        let dropped = harness.broker.relieveGlobalBound(disconnecting: &disconnected)
        #expect(disconnected.isEmpty)
        #expect(dropped > 0)
        let smallFrames = harness.output(of: small)
        #expect(sequences(smallFrames) == [1, 2, 3])
        #expect(!smallFrames.contains { if case .dropped = $0 { true } else { false } })
        #expect(
            harness.output(of: big).first
                == .dropped(.init(count: UInt64(dropped), firstSequence: 4, lastSequence: UInt64(3 + dropped)))
        )
    }

    @Test func coalesceShedsSupersededFramesFirst() {
        var harness = BrokerHarness(queueBytes: 1 << 20, maxQueuedBytes: 10_000)
        let publisher = harness.connect(1)
        let slow = harness.connect(2)
        harness.subscribe(slow, 1, "*", overflow: .coalesce)
        _ = harness.output(of: slow)
        harness.post(publisher, "keep", Self.payload)
        harness.broker.endTurn()
        var unused: [UInt64] = []
        fill(&harness, from: publisher, fastSequences: &unused)
        var disconnected: [ConnectionID] = []
        harness.broker.relieveGlobalBound(disconnecting: &disconnected)
        #expect(disconnected.isEmpty)
        // "keep" is older than every "n" but superseded by none: it stays, and the older "n" frames go.
        let frames = harness.output(of: slow)
        let names = BrokerHarness.notifications(frames)
        #expect(names.first == "keep")
        #expect(names.dropFirst().allSatisfy { $0 == "n" })
        #expect(harness.broker.accounting.bytes <= 7_500)
    }
}
