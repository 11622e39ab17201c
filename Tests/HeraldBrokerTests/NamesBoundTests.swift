import HeraldBroker
import HeraldWire
import Testing

/// `--max-names`: a `NAMES` answer is bounded, so its cost does not grow with what other clients registered.
struct NamesBoundTests {
    static func names(_ frames: [Frame]) -> [String] {
        frames.flatMap { frame -> [String] in
            if case .namesReport(let report) = frame { return report.names }
            return []
        }
    }

    @Test func answersUpToTheLimitCountingRetainedAndExactNamesApart() {
        var harness = BrokerHarness(maxNames: 4)
        let client = harness.connect(1)
        let other = harness.connect(2)
        harness.post(client, "a", "1", retain: true)
        harness.post(client, "b", "1", retain: true)
        harness.subscribe(other, 1, "b")
        harness.subscribe(other, 2, "c")
        harness.subscribe(other, 3, "d.*")  // not listed, not counted
        _ = harness.output(of: client)
        // 2 retained + 2 exact = 4 (b counted twice), at the limit: answered, b listed once.
        #expect(harness.send(.names(.init(request: 7)), from: client).keepsConnection)
        #expect(Self.names(harness.output(of: client)) == ["a", "b", "c"])
    }

    @Test func refusesPastTheLimitWithTooManyNamesBeforeBuildingAnAnswer() {
        var harness = BrokerHarness(maxNames: 4)
        let client = harness.connect(1)
        let other = harness.connect(2)
        for name in ["a", "b", "c"] { harness.post(client, name, "1", retain: true) }
        harness.subscribe(other, 1, "x")
        harness.subscribe(other, 2, "y")
        _ = harness.output(of: client)
        #expect(harness.send(.names(.init(request: 7)), from: client).closesConnection)
        let frames = harness.output(of: client)
        #expect(Self.names(frames).isEmpty)
        guard case .error(let error) = frames.last else {
            Issue.record("no ERROR")
            return
        }
        #expect(error.code == .tooManyNames)
        #expect(error.code.description == "TOO_MANY_NAMES")
        #expect(error.request == 7)
        #expect(
            error.reason
                == "3 retained names and 2 exactly subscribed names are over this daemon's limit of 4 names for NAMES"
        )
        // Only the asker pays: the other connection is still served.
        #expect(harness.send(.ping(.init(request: 3)), from: other).keepsConnection)
        #expect(harness.output(of: other).last == .ack(.init(request: 3, sequence: 3)))
    }
}
