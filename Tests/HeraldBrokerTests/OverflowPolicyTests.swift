import HeraldBroker
import HeraldWire
import Testing

/// wire.md's overflow policies, event by event. A NOTIFY for a one-letter name with a 10-byte payload
/// is 50 bytes.
struct OverflowPolicyTests {
    static let frameSize = 50

    private func sequences(_ frames: [Frame]) -> [String] {
        frames.compactMap { frame in
            switch frame {
            case .notify(let notify): "\(notify.name)\(notify.sequence)"
            case .dropped(let dropped): "dropped \(dropped.count)"
            case .error(let error): "\(error.code)"
            default: nil
            }
        }
    }

    @Test func coalesceKeepsTheNewestPerNameBeforeDroppingTheOldest() {
        var harness = BrokerHarness(queueBytes: 4 * Self.frameSize)
        let publisher = harness.connect(1)
        let slow = harness.connect(2)
        harness.subscribe(slow, 1, "*", overflow: .coalesce)
        _ = harness.output(of: slow)
        // a1 b2 a3 b4 fill the queue; a5 supersedes a1 and a3, which go first, oldest first.
        for name in ["a", "b", "a", "b", "a", "c"] {
            harness.post(publisher, name, "0123456789")
        }
        // a5 made room by dropping a1 (superseded by a3); c6 by dropping b2 (superseded by b4).
        #expect(sequences(harness.output(of: slow)) == ["dropped 2", "a3", "b4", "a5", "c6"])
    }

    @Test func coalesceFallsBackToTheOldestWhenEveryNameIsDistinct() {
        var harness = BrokerHarness(queueBytes: 2 * Self.frameSize)
        let publisher = harness.connect(1)
        let slow = harness.connect(2)
        harness.subscribe(slow, 1, "*", overflow: .coalesce)
        _ = harness.output(of: slow)
        for name in ["a", "b", "c"] { harness.post(publisher, name, "0123456789") }
        #expect(sequences(harness.output(of: slow)) == ["dropped 1", "b2", "c3"])
    }

    @Test func disconnectClosesTheConnectionWithSlowConsumer() {
        var harness = BrokerHarness(queueBytes: 2 * Self.frameSize)
        let publisher = harness.connect(1)
        let strict = harness.connect(2)
        let lenient = harness.connect(3)
        harness.subscribe(strict, 1, "n", overflow: .disconnect)
        harness.subscribe(lenient, 1, "n")
        _ = harness.output(of: strict)
        _ = harness.output(of: lenient)
        for _ in 0..<3 { harness.post(publisher, "n", "0123456789") }
        #expect(harness.broker.isClosing(strict))
        #expect(sequences(harness.output(of: strict)) == ["SLOW_CONSUMER"])
        // The others are not affected.
        #expect(!harness.broker.isClosing(lenient))
        #expect(sequences(harness.output(of: lenient)) == ["dropped 1", "n2", "n3"])
    }

    @Test func aConnectionUsesTheStrictestPolicyOfItsSubscriptions() {
        var harness = BrokerHarness(queueBytes: 2 * Self.frameSize)
        let publisher = harness.connect(1)
        let mixed = harness.connect(2)
        harness.subscribe(mixed, 1, "n")
        harness.subscribe(mixed, 2, "other", overflow: .disconnect)
        _ = harness.output(of: mixed)
        for _ in 0..<3 { harness.post(publisher, "n", "0123456789") }
        #expect(harness.broker.isClosing(mixed))
    }

    @Test func unsubscribingRelaxesThePolicyAgain() {
        var harness = BrokerHarness(queueBytes: 2 * Self.frameSize)
        let publisher = harness.connect(1)
        let mixed = harness.connect(2)
        harness.subscribe(mixed, 1, "n")
        harness.subscribe(mixed, 2, "other", overflow: .disconnect)
        harness.send(.unsubscribe(.init(subscription: 2)), from: mixed)
        _ = harness.output(of: mixed)
        for _ in 0..<3 { harness.post(publisher, "n", "0123456789") }
        #expect(!harness.broker.isClosing(mixed))
        #expect(sequences(harness.output(of: mixed)) == ["dropped 1", "n2", "n3"])
    }
}
