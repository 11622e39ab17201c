import HeraldBroker
import HeraldWire
import Testing

/// A turn's live posts are encoded once into the broker's arena; what a connection did not write by the
/// end of the turn is copied out before the arena is reused, whether the owner ends the turn or the arena
/// fills first.
struct FrameArenaTests {
    /// The payloads and sequence numbers of the live NOTIFY frames in `frames`.
    static func posts(_ frames: [Frame]) -> [(UInt64, String)] {
        frames.compactMap { frame in
            guard case .notify(let notify) = frame else { return nil }
            return (notify.sequence, String(decoding: notify.payload, as: UTF8.self))
        }
    }

    @Test func framesNotWrittenThisTurnSurviveTheArenasReuse() {
        var harness = BrokerHarness()
        let publisher = harness.connect(1)
        let fast = harness.connect(2)
        let slow = harness.connect(3)
        harness.subscribe(fast, 1, "n")
        harness.subscribe(slow, 1, "n")
        _ = harness.output(of: fast)
        _ = harness.output(of: slow)
        for turn in 0..<3 {
            for index in 0..<10 { harness.post(publisher, "n", "turn \(turn) post \(index)") }
            #expect(Self.posts(harness.output(of: fast)).count == 10)
            // The slow connection writes nothing; the next turn's posts overwrite the arena.
            harness.broker.endTurn()
        }
        let slowPosts = Self.posts(harness.output(of: slow))
        #expect(slowPosts.map(\.0) == Array(1...30))
        #expect(slowPosts.map(\.1) == (0..<3).flatMap { turn in (0..<10).map { "turn \(turn) post \($0)" } })
    }

    @Test func aFullArenaIsSettledWithoutTheOwnersHelp() {
        // About 1.5 MiB of NOTIFY frames in one "turn", more than the 1 MiB arena.
        var harness = BrokerHarness(queueBytes: 4 << 20)
        let publisher = harness.connect(1)
        let subscriber = harness.connect(2)
        harness.subscribe(subscriber, 1, "n")
        _ = harness.output(of: subscriber)
        let count = 20_000
        for index in 0..<count { harness.post(publisher, "n", "post \(index) " + String(repeating: "x", count: 20)) }
        let received = Self.posts(harness.output(of: subscriber))
        #expect(received.count == count)
        #expect(received.map(\.0) == Array(1...UInt64(count)))
        #expect(received.enumerated().allSatisfy { $1.1 == "post \($0) " + String(repeating: "x", count: 20) })
    }

    @Test func aPartlyWrittenFrameIsSettledWhole() {
        var harness = BrokerHarness()
        let publisher = harness.connect(1)
        let subscriber = harness.connect(2)
        harness.subscribe(subscriber, 1, "n")
        _ = harness.output(of: subscriber)
        harness.post(publisher, "n", "first")
        harness.post(publisher, "n", "second")
        var head: [UInt8] = []
        harness.broker.pendingOutput(for: subscriber, maxChunks: 1) { head.append(contentsOf: $0.prefix(30)) }
        harness.broker.didWrite(30, to: subscriber)
        harness.broker.endTurn()
        harness.post(publisher, "n", "third")  // reuses the arena from its start
        var rest: [UInt8] = []
        while harness.broker.hasOutput(subscriber) {
            var chunk: [UInt8] = []
            harness.broker.pendingOutput(for: subscriber, maxChunks: 64) { chunk.append(contentsOf: $0) }
            harness.broker.didWrite(chunk.count, to: subscriber)
            rest += chunk
        }
        var decoder = FrameDecoder(role: .client)
        decoder.append(contentsOf: head + rest)
        var frames: [Frame] = []
        while let frame = try! decoder.next() { frames.append(frame) }
        #expect(Self.posts(frames).map(\.1) == ["first", "second", "third"])
    }
}
