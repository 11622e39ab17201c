import HeraldBroker
import HeraldWire
import Testing

/// `NAMES` with `COUNTS` (version 2): each listed name with the live subscriptions matching it, event by event.
struct NamesCountsTests {
    /// The names and counts of a `COUNTS` answer, in order; fails the test when a frame lacks its counts.
    static func counts(_ frames: [Frame]) -> [String: UInt32] {
        var counts: [String: UInt32] = [:]
        for frame in frames {
            guard case .namesReport(let report) = frame else { continue }
            guard let reportCounts = report.counts else {
                Issue.record("a NAMES_REPORT without COUNTS")
                continue
            }
            for (name, count) in zip(report.names, reportCounts) { counts[name] = count }
        }
        return counts
    }

    /// Asks `NAMES` with `COUNTS` on `id` and returns the answer's counts.
    static func ask(_ harness: inout BrokerHarness, _ id: ConnectionID, request: UInt32 = 9) -> [String: UInt32] {
        _ = harness.output(of: id)
        #expect(harness.send(.names(.init(request: request, counts: true)), from: id).keepsConnection)
        return counts(harness.output(of: id))
    }

    @Test func countsExactSubscriptionsOnEveryConnection() {
        var harness = BrokerHarness()
        let asker = harness.connect(1, version: 2)
        let a = harness.connect(2, version: 2)
        let b = harness.connect(3)
        harness.subscribe(a, 1, "session.state")
        harness.subscribe(a, 2, "session.state")  // a second subscription on one connection counts again
        harness.subscribe(b, 1, "session.state")
        harness.subscribe(b, 2, "sensor.temp")
        #expect(Self.ask(&harness, asker) == ["session.state": 3, "sensor.temp": 1])
    }

    @Test func countsWildcardsMatchingEachListedName() {
        var harness = BrokerHarness()
        let asker = harness.connect(1, version: 2)
        let other = harness.connect(2, version: 2)
        harness.post(asker, "sensor.temp", "21", retain: true)
        harness.post(asker, "sensor.room.temp", "20", retain: true)
        harness.post(asker, "chat.room", "{}", retain: true)
        harness.subscribe(other, 1, "sensor.*")
        harness.subscribe(other, 2, "sensor.**")
        harness.subscribe(asker, 3, "**")
        harness.subscribe(other, 4, "*.room")
        #expect(
            Self.ask(&harness, asker) == [
                "sensor.temp": 3,  // sensor.*, sensor.**, **
                "sensor.room.temp": 2,  // sensor.**, **
                "chat.room": 2,  // **, *.room
            ]
        )
    }

    @Test func aNameWithARetainedValueAndNoSubscriberCountsZero() {
        var harness = BrokerHarness()
        let asker = harness.connect(1, version: 2)
        harness.post(asker, "sensor.temp", "21", retain: true)
        #expect(Self.ask(&harness, asker) == ["sensor.temp": 0])
    }

    @Test func anUnsubscribedOrClosedSubscriptionNoLongerCounts() {
        var harness = BrokerHarness()
        let asker = harness.connect(1, version: 2)
        let a = harness.connect(2, version: 2)
        let b = harness.connect(3, version: 2)
        harness.post(asker, "x.y", "1", retain: true)
        harness.subscribe(a, 1, "x.y")
        harness.subscribe(a, 2, "x.*")
        harness.subscribe(b, 1, "x.y")
        harness.subscribe(b, 2, "**")
        #expect(Self.ask(&harness, asker)["x.y"] == 4)
        harness.send(.unsubscribe(.init(subscription: 2)), from: a)
        #expect(Self.ask(&harness, asker)["x.y"] == 3)
        harness.broker.connectionClosed(b)
        #expect(Self.ask(&harness, asker)["x.y"] == 1)
        harness.send(.unsubscribe(.init(subscription: 1)), from: a)
        #expect(Self.ask(&harness, asker) == ["x.y": 0], "the retained value keeps the name listed")
    }

    @Test func aMonitorIsNotCountedButASubscriptionToEverythingIs() {
        var harness = BrokerHarness()
        let asker = harness.connect(1, version: 2)
        let monitor = harness.connect(2, version: 2)
        let other = harness.connect(3, version: 2)
        harness.post(asker, "a.b", "1", retain: true)
        #expect(harness.send(.monitor(.init(request: 5)), from: monitor).keepsConnection)
        #expect(harness.output(of: monitor).last == .ack(.init(request: 5, sequence: 1)))
        #expect(Self.ask(&harness, asker) == ["a.b": 0])
        // The monitor's own connection may subscribe too: that subscription counts.
        harness.subscribe(monitor, 6, "a.b")
        harness.subscribe(other, 1, "**")
        #expect(Self.ask(&harness, asker) == ["a.b": 2])
        // The monitor ended by UNSUBSCRIBE, then a second one ended by closing: never counted, never taken off twice.
        harness.send(.unsubscribe(.init(subscription: 5)), from: monitor)
        #expect(Self.ask(&harness, asker) == ["a.b": 2])
        #expect(harness.send(.monitor(.init(request: 7)), from: other).keepsConnection)
        #expect(Self.ask(&harness, asker) == ["a.b": 2])
        harness.broker.connectionClosed(other)
        #expect(Self.ask(&harness, asker) == ["a.b": 1])
    }

    @Test func withoutCountsTheAnswerIsUnchanged() {
        var harness = BrokerHarness()
        let asker = harness.connect(1, version: 2)
        harness.subscribe(asker, 1, "a")
        _ = harness.output(of: asker)
        harness.send(.names(.init(request: 4)), from: asker)
        #expect(harness.output(of: asker) == [.namesReport(.init(request: 4, names: ["a"]))])
    }

    @Test func aVersion1NamesWithCountsIsInvalidFlagsAsBefore() {
        var harness = BrokerHarness()
        let asker = harness.connect(1, version: 1)
        _ = harness.output(of: asker)
        #expect(harness.send(.names(.init(request: 4, counts: true)), from: asker).closesConnection)
        guard case .error(let error) = harness.output(of: asker).last else {
            Issue.record("no ERROR")
            return
        }
        #expect(error.code == .invalidFlags)
    }

    @Test func countsSplitOverFramesWithoutSplittingANameFromItsCount() {
        // 300 entries of 1 + 200 + 4 bytes: past one frame's 60,000 bytes of names.
        var harness = BrokerHarness(maxRetained: 400)
        let asker = harness.connect(1, version: 2)
        let other = harness.connect(2, version: 2)
        let names = (0..<300).map { String(repeating: "n", count: 197) + Self.threeDigits($0) }
        for name in names { harness.post(asker, name, "1", retain: true) }
        harness.subscribe(other, 1, "**")
        _ = harness.output(of: asker)
        harness.send(.names(.init(request: 4, counts: true)), from: asker)
        let frames = harness.output(of: asker)
        #expect(frames.count == 2)
        for (position, frame) in frames.enumerated() {
            guard case .namesReport(let report) = frame else {
                Issue.record("not a NAMES_REPORT: \(frame)")
                continue
            }
            #expect(report.more == (position < frames.count - 1))
            #expect(report.counts?.count == report.names.count)
            #expect(frame.encodedSize - 4 <= Limits.maxFrameLength(maxPayload: Limits.defaultMaxPayload))
        }
        #expect(Self.counts(frames) == Dictionary(uniqueKeysWithValues: names.map { ($0, 1) }))
    }

    private static func threeDigits(_ value: Int) -> String {
        let digits = String(value)
        return String(repeating: "0", count: 3 - digits.count) + digits
    }
}
