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
        let rest = harness.outputBytes(of: subscriber)
        var decoder = FrameDecoder(role: .client)
        decoder.append(contentsOf: head + rest)
        var frames: [Frame] = []
        while let frame = try! decoder.next() { frames.append(frame) }
        #expect(Self.posts(frames).map(\.1) == ["first", "second", "third"])
    }
}

/// Runs (live frames back to back in the arena, one record) split as they are written in arbitrary
/// pieces, dropped from, settled and coalesced: the subscriber's stream must stay exact.
struct FrameRunTests {
    @Test(arguments: [OverflowPolicy.dropOldest, .coalesce])
    func randomWritesAndDropsKeepTheStreamExact(policy: OverflowPolicy) {
        var generator = SystemRandomNumberGenerator()
        let seed = UInt64.random(in: .min ... .max, using: &generator)
        var random = SeededRandom(seed: seed)
        var harness = BrokerHarness(queueBytes: 2_000)
        let publisher = harness.connect(1)
        let subscriber = harness.connect(2)
        // Coalesce is switched on halfway, when runs exist, by a second subscription.
        harness.subscribe(subscriber, 1, "n.*")
        _ = harness.output(of: subscriber)
        var bytes: [UInt8] = []
        var posted: UInt64 = 0
        for step in 0..<3_000 {
            if step == 1_500 && policy == .coalesce { harness.subscribe(subscriber, 2, "x", overflow: .coalesce) }
            switch random.next() % 10 {
            case 0..<6:
                harness.post(
                    publisher,
                    "n.\(random.next() % 3)",
                    String(repeating: "p", count: Int(random.next() % 40))
                )
                posted += 1
            case 6..<9:
                var offered: [UInt8] = []
                harness.broker.pendingOutput(for: subscriber, maxChunks: 64) { offered.append(contentsOf: $0) }
                let count = offered.isEmpty ? 0 : Int(random.next() % UInt64(offered.count + 1))
                bytes += offered.prefix(count)
                harness.broker.didWrite(count, to: subscriber)
            default:
                harness.broker.endTurn()
            }
        }
        bytes += harness.outputBytes(of: subscriber)
        var decoder = FrameDecoder(role: .client)
        decoder.append(contentsOf: bytes)
        var seen: Set<UInt64> = []
        var last: UInt64 = 0
        var droppedCount: UInt64 = 0
        var notices: [Frame.Dropped] = []
        while true {
            let frame: Frame?
            do { frame = try decoder.next() } catch {
                Issue.record("seed \(seed): the stream does not decode: \(error)")
                return
            }
            guard let frame else { break }
            switch frame {
            case .notify(let notify) where notify.subscription == 0:
                #expect(notify.sequence > last, "seed \(seed): \(notify.sequence) after \(last)")
                last = notify.sequence
                seen.insert(notify.sequence)
                #expect(notify.payload.allSatisfy { $0 == UInt8(ascii: "p") }, "seed \(seed)")
            case .dropped(let dropped):
                droppedCount += dropped.count
                notices.append(dropped)
            case .ack:
                break
            default:
                Issue.record("seed \(seed): unexpected \(frame)")
            }
        }
        #expect(decoder.bufferedByteCount == 0, "seed \(seed)")
        #expect(
            UInt64(seen.count) + droppedCount == posted,
            "seed \(seed): \(seen.count) + \(droppedCount) != \(posted)"
        )
        #expect(harness.broker.statusReport(request: 1).dropped == droppedCount, "seed \(seed)")
        // Each notice's first and last are posts that never arrived, and every post that did not arrive lies
        // within a notice's range.
        for notice in notices {
            #expect(
                !seen.contains(notice.firstSequence) && !seen.contains(notice.lastSequence),
                "seed \(seed): \(notice)"
            )
        }
        for sequence in UInt64(1)...posted where !seen.contains(sequence) {
            #expect(
                notices.contains { $0.firstSequence <= sequence && sequence <= $0.lastSequence },
                "seed \(seed): \(sequence) is missing and no notice covers it"
            )
        }
    }
}

/// A small seeded generator, so a failure's seed reproduces it.
struct SeededRandom {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
