import HeraldBroker
import HeraldWire
import Testing

/// What passes between the broker and the daemon's supervisor: `PLUGIN` requests, reported subscriptions, and the
/// daemon's own posts.
struct DaemonRequestTests {
    @Test func aPluginRequestWaitsForTheDaemonAndIsAcknowledgedWithTheLastSequence() {
        var harness = BrokerHarness()
        let asker = harness.connect(1)
        _ = harness.output(of: asker)
        let poster = harness.connect(2)
        harness.post(poster, "a.b")
        let asked = harness.send(.plugin(.init(request: 5, action: .restart, name: "session")), from: asker)
        #expect(asked.keepsConnection)
        #expect(harness.output(of: asker).isEmpty, "nothing is answered before the daemon has acted")
        let requests = asked.pluginRequests
        #expect(requests.map(\.frame) == [.init(request: 5, action: .restart, name: "session")])
        #expect(requests.map(\.connection) == [asker])
        #expect(harness.answer(requests[0], error: nil).keepsConnection)
        #expect(harness.output(of: asker) == [.ack(.init(request: 5, sequence: 1))])
    }

    @Test func anUnknownPluginIsAnErrorCarryingTheRequestThatEndsTheConnection() {
        var harness = BrokerHarness()
        let asker = harness.connect(1)
        _ = harness.output(of: asker)
        let request = harness.send(.plugin(.init(request: 6, action: .start, name: "nope")), from: asker)
            .pluginRequests[0]
        #expect(harness.answer(request, error: "no plugin is called nope").closesConnection)
        #expect(
            harness.output(of: asker) == [.error(WireError(.unknownPlugin, "no plugin is called nope", request: 6))]
        )
    }

    @Test func anAnswerToAConnectionThatHasClosedIsDropped() {
        var harness = BrokerHarness()
        let asker = harness.connect(1)
        let request = harness.send(.plugin(.init(request: 6, action: .reload, name: "")), from: asker).pluginRequests[0]
        harness.broker.connectionClosed(asker)
        #expect(harness.answer(request, error: nil).keepsConnection)
    }

    @Test func subscriptionsAreReportedOnlyWhileTheDaemonAsksAndOnlyWhenTheyTookEffect() {
        var harness = BrokerHarness()
        let id = harness.connect(1)
        func subscribe(_ subscription: UInt32, _ pattern: String) -> [String] {
            harness.send(.subscribe(.init(subscription: subscription, pattern: try! Pattern(pattern))), from: id)
                .subscribed.map(\.text)
        }
        #expect(subscribe(1, "before.*").isEmpty)
        harness.broker.reportsSubscriptions = true
        #expect(subscribe(2, "session.*") == ["session.*"])
        // A duplicate subscription id is refused: not reported.
        #expect(subscribe(2, "other.*").isEmpty)
    }

    @Test func theDaemonMayPostAndRetainUnderHeraldWithItsOwnIdentity() {
        var harness = BrokerHarness()
        let watcher = harness.connect(1)
        harness.subscribe(watcher, 1, "herald.plugin.*")
        _ = harness.output(of: watcher)
        let daemon = Sender(pid: 42, uid: 1000, gid: 1000)
        let sequence = harness.broker.postAsDaemon(
            name: "herald.plugin.session",
            payload: Array(#"{"state":"running"}"#.utf8),
            retain: true,
            sender: daemon,
            now: 7
        )
        guard case .notify(let live)? = harness.output(of: watcher).first else {
            Issue.record("no live NOTIFY")
            return
        }
        #expect(live.sequence == sequence && live.pid == 42 && live.name == "herald.plugin.session")
        let late = harness.connect(2)
        harness.subscribe(late, 1, "herald.plugin.*")
        #expect(BrokerHarness.notifications(harness.output(of: late)) == ["herald.plugin.session(retained)"])
    }
}
