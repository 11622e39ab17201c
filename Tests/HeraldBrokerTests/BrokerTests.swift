import HeraldBroker
import HeraldWire
import Testing

struct BrokerTests {
    /// heraldd writes the connections `turnEnding` names in one batch, so each must be named once: even an id
    /// that got output, closed and was reused by a new connection with output of its own within the turn.
    @Test func turnEndingNamesAReusedIdOnce() {
        var harness = BrokerHarness()
        let subscriber = harness.connect(3)
        harness.subscribe(subscriber, 1, "a.*")
        let publisher = harness.connect(4)
        harness.post(publisher, "a.b")
        harness.broker.connectionClosed(subscriber)
        let reused = harness.connect(3)
        harness.subscribe(reused, 1, "a.*")
        harness.post(publisher, "a.c")
        let ids = harness.turnEnding()
        #expect(ids.filter { $0 == reused }.count == 1, "named \(ids)")
        #expect(harness.turnEnding().isEmpty, "named again in the next turn")
        #expect(BrokerHarness.notifications(harness.output(of: reused)) == ["a.c"])
    }

    @Test func welcomesAHelloWithTheHighestCommonVersionAndTheLimits() {
        var harness = BrokerHarness()
        let id = ConnectionID(3)
        #expect(harness.open(id, sender: BrokerHarness.owner).keepsConnection)
        #expect(harness.send(.hello(.init(minVersion: 1, maxVersion: 9, client: "x")), from: id).keepsConnection)
        #expect(
            harness.output(of: id) == [
                .welcome(
                    .init(version: 2, maxSubscriptions: 16, maxPayload: 65536, daemonPID: 42, server: "heraldd test")
                )
            ]
        )
    }

    @Test func refusesAHelloWithNoCommonVersionAndCloses() {
        var harness = BrokerHarness()
        let id = ConnectionID(3)
        harness.open(id, sender: BrokerHarness.owner)
        #expect(harness.send(.hello(.init(minVersion: 3, maxVersion: 4, client: "x")), from: id).closesConnection)
        #expect(
            harness.output(of: id) == [
                .error(
                    WireError(.unsupportedVersion, "the client speaks versions 3...4; this daemon speaks 1...2")
                )
            ]
        )
        #expect(!harness.broker.wantsInput(id))
    }

    @Test func requiresHelloFirstAndRefusesASecondHello() {
        var harness = BrokerHarness()
        let first = ConnectionID(1)
        harness.open(first, sender: BrokerHarness.owner)
        #expect(harness.send(.ping(.init(request: 1)), from: first).closesConnection)
        #expect(
            harness.output(of: first) == [
                .error(WireError(.helloRequired, "the first frame must be HELLO, not PING", request: 1))
            ]
        )

        let second = harness.connect(2)
        #expect(harness.send(.hello(.init(client: "again")), from: second).closesConnection)
        #expect(
            harness.output(of: second) == [
                .error(WireError(.unexpectedHello, "HELLO was already received on this connection"))
            ]
        )
    }

    @Test func refusesAPeerOfAnotherUidButAcceptsRoot() {
        var harness = BrokerHarness()
        let stranger = ConnectionID(1)
        #expect(
            harness.open(stranger, sender: Sender(pid: 5, uid: 1001, gid: 1001)).closesConnection
        )
        #expect(
            harness.output(of: stranger) == [
                .error(WireError(.permissionDenied, "uid 1001 may not use this daemon, which belongs to uid 1000"))
            ]
        )
        let root = ConnectionID(2)
        #expect(harness.open(root, sender: Sender(pid: 6, uid: 0, gid: 0)).keepsConnection)
    }

    @Test func acknowledgesASubscriptionWithTheLastSequenceSoFar() {
        var harness = BrokerHarness()
        let publisher = harness.connect(1)
        let subscriber = harness.connect(2)
        harness.post(publisher, "a.b")
        harness.post(publisher, "a.b")
        harness.subscribe(subscriber, 7, "a.*")
        #expect(harness.output(of: subscriber) == [.ack(.init(request: 7, sequence: 2))])
        harness.post(publisher, "a.c", "x")
        let frames = harness.output(of: subscriber)
        guard case .notify(let notify) = frames.first, frames.count == 1 else {
            Issue.record("expected one NOTIFY, got \(frames)")
            return
        }
        #expect(notify.sequence == 3)
        #expect(notify.subscription == 0)
        #expect(!notify.retained)
        #expect(notify.payload == Array("x".utf8))
    }

    @Test func stampsTheSenderFromTheConnectionAndTheTimeFromTheOwner() {
        var harness = BrokerHarness()
        let publisher = harness.connect(1, sender: Sender(pid: 777, uid: 1000, gid: 55))
        let subscriber = harness.connect(2)
        harness.subscribe(subscriber, 1, "**")
        _ = harness.output(of: subscriber)
        harness.post(publisher, "x")
        guard case .notify(let notify) = harness.output(of: subscriber).first else {
            Issue.record("no NOTIFY")
            return
        }
        #expect(notify.pid == 777)
        #expect(notify.uid == 1000)
        #expect(notify.gid == 55)
        #expect(notify.time == harness.now)
    }

    @Test func queuesAPostOncePerConnectionHoweverManySubscriptionsMatch() {
        var harness = BrokerHarness()
        let id = harness.connect(1)
        harness.subscribe(id, 1, "a.b")
        harness.subscribe(id, 2, "a.*")
        harness.subscribe(id, 3, "**")
        _ = harness.output(of: id)
        harness.post(id, "a.b")
        #expect(BrokerHarness.notifications(harness.output(of: id)) == ["a.b"])
    }

    @Test func deliversOnlyToMatchingConnections() {
        var harness = BrokerHarness()
        let publisher = harness.connect(1)
        let exact = harness.connect(2)
        let wildcard = harness.connect(3)
        let other = harness.connect(4)
        harness.subscribe(exact, 1, "session.state")
        harness.subscribe(wildcard, 1, "session.**")
        harness.subscribe(other, 1, "chat.*")
        for id in [exact, wildcard, other] { _ = harness.output(of: id) }
        harness.post(publisher, "session.state")
        harness.post(publisher, "session.a.b")
        harness.post(publisher, "chat.room")
        #expect(BrokerHarness.notifications(harness.output(of: exact)) == ["session.state"])
        #expect(BrokerHarness.notifications(harness.output(of: wildcard)) == ["session.state", "session.a.b"])
        #expect(BrokerHarness.notifications(harness.output(of: other)) == ["chat.room"])
    }

    @Test func replaysRetainedValuesBeforeTheAckThenLivePosts() {
        var harness = BrokerHarness()
        let publisher = harness.connect(1)
        harness.post(publisher, "session.state", #"{"state":"away"}"#, retain: true)
        harness.post(publisher, "session.user", "alice", retain: true)
        harness.post(publisher, "other.x", "y", retain: true)
        let subscriber = harness.connect(2)
        harness.subscribe(subscriber, 9, "session.*")
        harness.post(publisher, "session.state", "live")
        let frames = harness.output(of: subscriber)
        #expect(
            BrokerHarness.notifications(frames) == [
                "session.state(retained)", "session.user(retained)", "session.state",
            ]
        )
        #expect(frames[2] == .ack(.init(request: 9, sequence: 3)))
        if case .notify(let replay) = frames[0] {
            #expect(replay.subscription == 9)
            #expect(replay.sequence == 1)
            #expect(replay.payload == Array(#"{"state":"away"}"#.utf8))
        }
    }

    @Test func clearsARetainedValueWithAnEmptyRetainedPost() {
        var harness = BrokerHarness()
        let id = harness.connect(1)
        harness.post(id, "k", "v", retain: true)
        harness.post(id, "k", "", retain: true)
        harness.send(.get(.init(request: 4, name: "k")), from: id)
        #expect(harness.output(of: id) == [.ack(.init(request: 4, sequence: 2))])
        #expect(harness.broker.statusReport(request: 1).retained == 0)
    }

    @Test func answersGetWithTheRetainedValueThenAnAck() {
        var harness = BrokerHarness()
        let id = harness.connect(1)
        harness.post(id, "k", "v", retain: true)
        harness.send(.get(.init(request: 4, name: "k")), from: id)
        let frames = harness.output(of: id)
        #expect(BrokerHarness.notifications(frames) == ["k(retained)"])
        #expect(frames.last == .ack(.init(request: 4, sequence: 1)))
    }

    @Test func acknowledgesAPostThatAsksWithItsSequence() {
        var harness = BrokerHarness()
        let id = harness.connect(1)
        harness.post(id, "a")
        harness.post(id, "a", request: 5)
        #expect(harness.output(of: id) == [.ack(.init(request: 5, sequence: 2))])
    }

    @Test func refusesPostsToReservedNames() {
        var harness = BrokerHarness()
        let id = harness.connect(1)
        harness.post(id, "herald.dropped", request: 3)
        #expect(
            harness.output(of: id) == [
                .error(
                    WireError(
                        .reservedName,
                        "\"herald.dropped\" is reserved: names under herald. are the library's notices",
                        request: 3
                    )
                )
            ]
        )
    }

    @Test func unsubscribingStopsDeliveryAndAnUnknownSubscriptionIsAnError() {
        var harness = BrokerHarness()
        let id = harness.connect(1)
        harness.subscribe(id, 1, "a")
        harness.send(.unsubscribe(.init(subscription: 1)), from: id)
        harness.post(id, "a")
        #expect(BrokerHarness.notifications(harness.output(of: id)).isEmpty)
        #expect(harness.send(.unsubscribe(.init(subscription: 1)), from: id).closesConnection)
        #expect(
            harness.output(of: id).last
                == .error(WireError(.unknownSubscription, "subscription 1 is not live on this connection", request: 1))
        )
    }

    @Test func enforcesTheSubscriptionLimitAndUniqueIds() {
        var harness = BrokerHarness(maxSubscriptions: 2)
        let id = harness.connect(1)
        harness.subscribe(id, 1, "a")
        #expect(
            harness.send(.subscribe(.init(subscription: 1, pattern: try! Pattern("b"))), from: id).closesConnection
        )
        #expect(
            harness.output(of: id).last
                == .error(
                    WireError(.duplicateSubscription, "subscription 1 is already live on this connection", request: 1)
                )
        )
        let other = harness.connect(2)
        harness.subscribe(other, 1, "a")
        harness.subscribe(other, 2, "b")
        #expect(
            harness.send(.subscribe(.init(subscription: 3, pattern: try! Pattern("c"))), from: other)
                .closesConnection
        )
        #expect(
            harness.output(of: other).last
                == .error(
                    WireError(
                        .tooManySubscriptions,
                        "this connection already holds 2 subscriptions, the limit",
                        request: 3
                    )
                )
        )
    }

    @Test func enforcesTheRetainedLimitButStillAllowsUpdatesAndClears() {
        var harness = BrokerHarness(maxRetained: 1)
        let id = harness.connect(1)
        harness.post(id, "a", "1", retain: true)
        harness.post(id, "a", "2", retain: true)
        harness.post(id, "b", "", retain: true)
        #expect(harness.broker.wantsInput(id))
        #expect(
            harness.send(.post(.init(request: 2, name: "b", payload: [1], retain: true)), from: id).closesConnection
        )
        #expect(
            harness.output(of: id).last
                == .error(
                    WireError(.tooManyRetained, "1 names already have a retained value, the limit is 1", request: 2)
                )
        )
    }

    @Test func closingAConnectionRemovesItsSubscriptions() {
        var harness = BrokerHarness()
        let publisher = harness.connect(1)
        let subscriber = harness.connect(2)
        harness.subscribe(subscriber, 1, "a.*")
        harness.subscribe(subscriber, 2, "b")
        harness.broker.connectionClosed(subscriber)
        let status = harness.broker.statusReport(request: 1)
        #expect(status.subscriptions == 0)
        #expect(status.connections == 1)
        // The id can be reused by a new connection, which gets nothing of the old one's.
        let reused = harness.connect(2)
        harness.post(publisher, "a.x")
        #expect(BrokerHarness.notifications(harness.output(of: reused)).isEmpty)
    }

    @Test func byeClosesAfterFlushAndLaterFramesAreIgnored() {
        var harness = BrokerHarness()
        let id = harness.connect(1)
        #expect(harness.send(.bye, from: id).closesConnection)
        let ping = harness.send(.ping(.init(request: 1)), from: id)
        #expect(ping.frames == 0 && ping.actions.isEmpty, "a closing connection's input was handled: \(ping.actions)")
        #expect(harness.output(of: id).isEmpty)
    }

    @Test func shutdownSendsAFinalErrorToEveryConnection() {
        var harness = BrokerHarness()
        let a = harness.connect(1)
        let b = harness.connect(2)
        var actions: [BrokerAction] = []
        harness.broker.shutDown(into: &actions)
        #expect(actions == [.closeAfterFlush(a), .closeAfterFlush(b)])
        for id in [a, b] {
            #expect(harness.output(of: id) == [.error(WireError(.shuttingDown, "heraldd is shutting down"))])
            #expect(harness.broker.isClosing(id))
        }
    }

    @Test func countsPostedDeliveredAndDropped() {
        var harness = BrokerHarness()
        let id = harness.connect(1)
        harness.subscribe(id, 1, "**")
        harness.post(id, "a")
        harness.post(id, "b")
        _ = harness.output(of: id)
        harness.send(.status(.init(request: 8)), from: id)
        guard case .statusReport(let report) = harness.output(of: id).first else {
            Issue.record("no STATUS_REPORT")
            return
        }
        #expect(report.request == 8)
        #expect(report.posted == 2)
        #expect(report.delivered == 2)
        #expect(report.subscriptions == 1)
        #expect(report.pid == 42)
    }

    @Test func livePostsRetainedPostsAndTheDaemonsPostsReachSubscribersAlike() {
        var harness = BrokerHarness()
        let poster = harness.connect(1)
        let subscriber = harness.connect(2)
        harness.subscribe(subscriber, 7, "app.state")
        _ = harness.output(of: subscriber)

        harness.post(poster, "app.state", "live")
        harness.post(poster, "app.state", "kept", retain: true)
        let daemon = Sender(pid: 42, uid: 1000, gid: 1000)
        harness.broker.postAsDaemon(
            name: "app.state",
            payload: Array("own".utf8),
            retain: false,
            sender: daemon,
            now: 9
        )

        let notices = harness.output(of: subscriber).compactMap { frame -> Frame.Notify? in
            guard case .notify(let notify) = frame else { return nil }
            return notify
        }
        #expect(notices.map { String(decoding: $0.payload, as: UTF8.self) } == ["live", "kept", "own"])
        #expect(notices.map(\.sequence) == [1, 2, 3])
        #expect(notices.allSatisfy { !$0.retained && $0.name == "app.state" })
        #expect(notices.map(\.pid) == [BrokerHarness.owner.pid, BrokerHarness.owner.pid, 42])
        // The retained post is also the name's value, replayed to a new subscriber.
        let late = harness.connect(3)
        harness.subscribe(late, 1, "app.state")
        guard case .notify(let replay) = harness.output(of: late).first else {
            Issue.record("no retained value replayed")
            return
        }
        #expect(replay.retained && replay.sequence == 2 && replay.payload == Array("kept".utf8))
    }
}
