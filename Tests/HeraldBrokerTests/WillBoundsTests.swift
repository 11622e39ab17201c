import HeraldWire
import Testing

@testable import HeraldBroker

/// Wills held (registered on open connections, or pending after their connection ended without `BYE`) are
/// bounded in count and bytes (error 22, `TOO_MANY_WILLS`), and fall due from a heap, not a scan.
struct WillBoundsTests {
    private func will(_ name: String, bytes: Int = 10, delay: UInt32 = 1000, request: UInt32 = 7) -> Frame {
        .will(
            .init(
                request: request,
                delayMilliseconds: delay,
                name: name,
                payload: [UInt8](repeating: 0x77, count: bytes)
            )
        )
    }

    private func refusal(_ frames: [Frame]) -> WireError? {
        if case .error(let error)? = frames.last { return error }
        return nil
    }

    @Test func refusesAWillPastTheCountAndCountsAReplacementOnce() {
        var harness = BrokerHarness(maxWills: 2)
        let first = harness.connect(1)
        let second = harness.connect(2)
        harness.send(will("a"), from: first)
        harness.send(will("a2"), from: first)  // replaces: still one will
        harness.send(will("b"), from: second)
        #expect(harness.output(of: first).count == 2)
        #expect(harness.output(of: second) == [.ack(.init(request: 7, sequence: 0))])
        let third = harness.connect(3)
        harness.send(will("c", request: 9), from: third)
        let error = refusal(harness.output(of: third))
        #expect(error?.code == .tooManyWills)
        #expect(error?.code.rawValue == 22)
        #expect(error?.request == 9)
        #expect(harness.broker.isClosing(third))
        // Withdrawing a will makes room.
        harness.send(.will(.init(request: 8, delayMilliseconds: 0, name: "", payload: [])), from: second)
        let fourth = harness.connect(4)
        harness.send(will("d"), from: fourth)
        #expect(harness.output(of: fourth) == [.ack(.init(request: 7, sequence: 0))])
    }

    @Test func refusesAWillPastTheBytes() {
        // Each will costs its name and payload: "a" and 60 bytes, 61.
        var harness = BrokerHarness(maxWillBytes: 150)
        let first = harness.connect(1)
        let second = harness.connect(2)
        harness.send(will("a", bytes: 60), from: first)
        harness.send(will("b", bytes: 60), from: second)
        let third = harness.connect(3)
        harness.send(will("c", bytes: 60), from: third)
        #expect(refusal(harness.output(of: third))?.code == .tooManyWills)
        // A smaller will still fits, and a connection may grow its own will within what is left.
        let fourth = harness.connect(4)
        harness.send(will("d", bytes: 20), from: fourth)
        #expect(harness.output(of: fourth) == [.ack(.init(request: 7, sequence: 0))])
        harness.send(will("a", bytes: 66), from: first)
        #expect(refusal(harness.output(of: first)) == nil)
    }

    @Test func aPendingWillStaysChargedUntilItIsPosted() {
        var harness = BrokerHarness(maxWills: 1)
        let gone = harness.connect(1)
        harness.send(will("gone"), from: gone)
        harness.broker.connectionClosed(gone, monotonicNow: 0)
        let next = harness.connect(2)
        harness.send(will("next"), from: next)
        #expect(refusal(harness.output(of: next))?.code == .tooManyWills)
        harness.broker.postDueWills(monotonicNow: 1_000_000_000, realtimeNow: 1)
        let later = harness.connect(3)
        harness.send(will("later"), from: later)
        #expect(harness.output(of: later) == [.ack(.init(request: 7, sequence: 1))])
    }

    @Test func byeMonitorAndShutdownGiveTheirWillsBack() {
        var harness = BrokerHarness(maxWills: 2)
        let polite = harness.connect(1)
        harness.send(will("polite"), from: polite)
        harness.send(.bye, from: polite)
        harness.broker.connectionClosed(polite, monotonicNow: 0)
        let monitor = harness.connect(2)
        harness.send(will("monitor"), from: monitor)
        harness.send(.monitor(.init(request: 3)), from: monitor)
        let crashed = harness.connect(3)
        harness.send(will("crashed"), from: crashed)
        harness.broker.connectionClosed(crashed, monotonicNow: 0)
        // One pending will: one more fits, a second does not.
        let a = harness.connect(4)
        harness.send(will("a"), from: a)
        #expect(refusal(harness.output(of: a)) == nil)
        let b = harness.connect(5)
        harness.send(will("b"), from: b)
        #expect(refusal(harness.output(of: b))?.code == .tooManyWills)
        var actions: [BrokerAction] = []
        harness.broker.shutDown(into: &actions)
        #expect(harness.broker.willCount == 1)  // a's, on its open connection
        harness.broker.connectionClosed(a, monotonicNow: 0)
        #expect(harness.broker.willCount == 0 && harness.broker.willBytes == 0)
    }

    @Test func willsFallDueInDeadlineOrderAndInScheduleOrderOnTies() {
        var harness = BrokerHarness()
        let observer = harness.connect(1)
        harness.subscribe(observer, 1, "**")
        for (slot, delay) in [(2, 3000), (3, 1000), (4, 2000), (5, 1000)] {
            let id = harness.connect(slot)
            harness.send(will("w\(slot)", delay: UInt32(delay)), from: id)
            harness.broker.connectionClosed(id, monotonicNow: 0)
        }
        #expect(harness.broker.nextWillDeadline == 1_000_000_000)
        _ = harness.output(of: observer)
        #expect(harness.broker.postDueWills(monotonicNow: 1_999_999_999, realtimeNow: 1) == 2)
        #expect(harness.broker.nextWillDeadline == 2_000_000_000)
        #expect(harness.broker.postDueWills(monotonicNow: 10_000_000_000, realtimeNow: 1) == 2)
        #expect(BrokerHarness.notifications(harness.output(of: observer)) == ["w3", "w5", "w4", "w2"])
        #expect(harness.broker.nextWillDeadline == nil)
    }

    @Test func theHeapYieldsEveryValueInDeadlineOrder() {
        var heap = DeadlineHeap<Int>()
        var generator = SystemRandomNumberGenerator()
        let deadlines = (0..<1000).map { _ in UInt64.random(in: 1..<100, using: &generator) }
        for (index, deadline) in deadlines.enumerated() { heap.insert(index, deadline: deadline) }
        #expect(heap.nextDeadline == deadlines.min())
        #expect(heap.popFirst(dueBy: 0) == nil)
        var popped: [Int] = []
        while let index = heap.popFirst(dueBy: .max) { popped.append(index) }
        // By deadline, and by insertion on ties: exactly a stable sort.
        let expected = deadlines.indices.sorted { (deadlines[$0], $0) < (deadlines[$1], $1) }
        #expect(popped == expected)
        #expect(heap.isEmpty)
    }
}
