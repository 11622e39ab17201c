import HeraldBroker
import HeraldWire
import Testing

struct WillTests {
    private func will(_ name: String, _ payload: String = "gone", delay: UInt32 = 1000, retain: Bool = false) -> Frame {
        .will(.init(request: 7, delayMilliseconds: delay, name: name, payload: Array(payload.utf8), retain: retain))
    }

    @Test func postsTheWillAfterTheGracePeriodWhenTheConnectionDiesWithoutBye() {
        var harness = BrokerHarness()
        let observer = harness.connect(1)
        harness.subscribe(observer, 1, "presence.*")
        let client = harness.connect(2, sender: Sender(pid: 4321, uid: 1000, gid: 1000))
        harness.send(will("presence.alice"), from: client)
        #expect(harness.output(of: client) == [.ack(.init(request: 7, sequence: 0))])
        harness.broker.connectionClosed(client, monotonicNow: 5_000_000_000)
        #expect(harness.broker.nextWillDeadline == 6_000_000_000)
        let early = harness.broker.postDueWills(monotonicNow: 5_999_999_999, realtimeNow: 1)
        #expect(early == 0)
        _ = harness.output(of: observer)
        let due = harness.broker.postDueWills(monotonicNow: 6_000_000_000, realtimeNow: 77)
        #expect(due == 1)
        guard case .notify(let notify) = harness.output(of: observer).first else {
            Issue.record("the will was not delivered")
            return
        }
        #expect(notify.name == "presence.alice")
        #expect(notify.payload == Array("gone".utf8))
        #expect(notify.pid == 4321)
        #expect(notify.time == 77)
        #expect(harness.broker.nextWillDeadline == nil)
    }

    @Test func discardsTheWillAfterBye() {
        var harness = BrokerHarness()
        let client = harness.connect(2)
        harness.send(will("presence.alice"), from: client)
        harness.send(.bye, from: client)
        harness.broker.connectionClosed(client, monotonicNow: 0)
        #expect(harness.broker.nextWillDeadline == nil)
    }

    @Test func anEmptyNameWithdrawsTheWillAndALaterWillReplacesIt() {
        var harness = BrokerHarness()
        let observer = harness.connect(1)
        harness.subscribe(observer, 1, "**")
        let client = harness.connect(2)
        harness.send(will("first"), from: client)
        harness.send(will("second"), from: client)
        let withdrawn = harness.connect(3)
        harness.send(will("third"), from: withdrawn)
        // As wire.md has it: an empty name withdraws, and has no payload.
        #expect(harness.send(will("", ""), from: withdrawn).keepsConnection)
        harness.broker.connectionClosed(client, monotonicNow: 0)
        harness.broker.connectionClosed(withdrawn, monotonicNow: 0)
        _ = harness.output(of: observer)
        let posted = harness.broker.postDueWills(monotonicNow: 10_000_000_000, realtimeNow: 1)
        #expect(posted == 1)
        #expect(BrokerHarness.notifications(harness.output(of: observer)) == ["second"])
    }

    @Test func aRetainedWillSetsTheRetainedValue() {
        var harness = BrokerHarness()
        let client = harness.connect(2)
        harness.send(will("presence.alice", "gone", delay: 0, retain: true), from: client)
        harness.broker.connectionClosed(client, monotonicNow: 0)
        harness.broker.postDueWills(monotonicNow: 0, realtimeNow: 1)
        let reader = harness.connect(3)
        harness.send(.get(.init(request: 2, name: "presence.alice")), from: reader)
        #expect(BrokerHarness.notifications(harness.output(of: reader)) == ["presence.alice(retained)"])
    }

    @Test func shutdownDiscardsPendingWills() {
        var harness = BrokerHarness()
        let client = harness.connect(2)
        harness.send(will("presence.alice"), from: client)
        harness.broker.connectionClosed(client, monotonicNow: 0)
        var actions: [BrokerAction] = []
        harness.broker.shutDown(into: &actions)
        #expect(harness.broker.nextWillDeadline == nil)
    }

    @Test func refusesAWillForAReservedName() {
        var harness = BrokerHarness()
        let client = harness.connect(2)
        #expect(harness.send(will("herald.dropped"), from: client).closesConnection)
        guard case .error(let error) = harness.output(of: client).last else {
            Issue.record("no ERROR")
            return
        }
        #expect(error.code == .reservedName)
    }
}
