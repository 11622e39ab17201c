import HeraldBroker
import HeraldWire
import Testing

/// Issue 20's decisions that the broker makes, event by event: what wire.md now says where it was silent.
struct WireContractTests {
    /// The frame `output` last decoded, as a final ERROR.
    private func finalError(_ frames: [Frame]) -> WireError? {
        guard case .error(let error)? = frames.last else { return nil }
        return error
    }

    /// Point 4: a peer of another uid gets an ERROR as its first frame, in place of WELCOME, with request 0.
    @Test func anotherUidGetsPermissionDeniedInPlaceOfWelcome() {
        var harness = BrokerHarness()
        let id = ConnectionID(1)
        #expect(harness.open(id, sender: Sender(pid: 7, uid: 4242, gid: 4242)).closesConnection)
        let frames = harness.output(of: id)
        #expect(frames.count == 1)
        #expect(finalError(frames)?.code == .permissionDenied)
        #expect(finalError(frames)?.request == 0)
    }

    /// Point 3: HELLO_REQUIRED names the request of the frame it answers.
    @Test func helloRequiredCarriesTheRequestOfTheFrameItAnswers() {
        var harness = BrokerHarness()
        let id = ConnectionID(1)
        harness.open(id, sender: BrokerHarness.owner)
        harness.send(.ping(.init(request: 33)), from: id)
        let frames = harness.output(of: id)
        #expect(finalError(frames)?.code == .helloRequired)
        #expect(finalError(frames)?.request == 33)
        var bye = BrokerHarness()
        bye.open(id, sender: BrokerHarness.owner)
        bye.send(.bye, from: id)
        #expect(finalError(bye.output(of: id)) == WireError(.helloRequired, "the first frame must be HELLO, not BYE"))
    }

    /// Point 3: every error the broker raises about a frame names that frame's request or subscription.
    @Test(arguments: [
        ("DUPLICATE_SUBSCRIPTION", Frame.subscribe(.init(subscription: 1, pattern: try! Pattern("b"))), 1 as UInt32),
        ("UNKNOWN_SUBSCRIPTION", Frame.unsubscribe(.init(subscription: 9)), 9),
        ("RESERVED_NAME", Frame.post(.init(request: 4, name: "herald.x", payload: [])), 4),
        ("RESERVED_NAME", Frame.will(.init(request: 5, delayMilliseconds: 0, name: "herald.x", payload: [])), 5),
        ("UNEXPECTED_HELLO", Frame.hello(.init(client: "again")), 0),
        ("DUPLICATE_SUBSCRIPTION", Frame.monitor(.init(request: 1)), 1),
    ])
    func brokerErrorsFollowTheRequestRule(code: String, frame: Frame, request: UInt32) {
        var harness = BrokerHarness()
        let id = harness.connect(1)
        harness.subscribe(id, 1, "a")
        _ = harness.output(of: id)
        #expect(harness.send(frame, from: id).closesConnection)
        let error = finalError(harness.output(of: id))
        #expect(error?.code.description == code)
        #expect(error?.request == request)
    }

    /// Point 10: MONITOR is SUBSCRIBE `**` without the retained replay, so its limit applies too.
    @Test func monitorCountsAgainstTheSubscriptionLimit() {
        var harness = BrokerHarness(maxSubscriptions: 1)
        let id = harness.connect(1)
        harness.subscribe(id, 1, "a")
        _ = harness.output(of: id)
        #expect(harness.send(.monitor(.init(request: 2)), from: id).closesConnection)
        let error = finalError(harness.output(of: id))
        #expect(error?.code == .tooManySubscriptions)
        #expect(error?.request == 2)
    }

    /// Point 10: no retained value before the monitor's ACK; live posts as subscription 0; UNSUBSCRIBE ends it,
    /// and the connection stays read-only.
    @Test func monitorReplaysNothingAndUnsubscribeEndsItButNotTheReadOnlyRule() {
        var harness = BrokerHarness()
        let publisher = harness.connect(1)
        harness.post(publisher, "s.state", "x", retain: true)
        let monitor = harness.connect(2)
        harness.send(.monitor(.init(request: 7)), from: monitor)
        #expect(harness.output(of: monitor) == [.ack(.init(request: 7, sequence: 1))])
        harness.post(publisher, "any.thing", "y")
        guard case .notify(let notify)? = harness.output(of: monitor).first else {
            Issue.record("the monitor got no live post")
            return
        }
        #expect(notify.subscription == 0 && !notify.retained)
        harness.send(.unsubscribe(.init(subscription: 7)), from: monitor)
        harness.post(publisher, "any.thing", "z")
        #expect(harness.output(of: monitor) == [])
        #expect(harness.send(.post(.init(request: 3, name: "m", payload: [])), from: monitor).closesConnection)
        #expect(finalError(harness.output(of: monitor))?.code == .permissionDenied)
    }

    /// Point 11: NAMES sorts by UTF-8 bytes, not by Swift's String order (which compares normalized scalars), and
    /// lists a name several connections use once.
    @Test func namesAreSortedBytewiseAndListedOnce() {
        var harness = BrokerHarness()
        let one = harness.connect(1)
        let two = harness.connect(2)
        // "o" with a combining diaeresis composes (to U+00F6) and with a combining ring does not: String's order
        // puts the ring first, the bytes (CC 88 < CC 8A) the diaeresis.
        let diaeresis = "n.o\u{308}"
        let ring = "n.o\u{30A}"
        #expect(ring < diaeresis)
        harness.subscribe(one, 1, ring)
        harness.subscribe(two, 1, ring)
        harness.post(one, diaeresis, "v", retain: true)
        harness.subscribe(two, 2, diaeresis)
        harness.subscribe(one, 2, "n")
        _ = harness.output(of: one)
        harness.send(.names(.init(request: 5)), from: one)
        #expect(
            harness.output(of: one) == [.namesReport(.init(request: 5, names: ["n", diaeresis, ring]))]
        )
    }

    /// Point 11: the answer splits where wire.md says: as many names as fit in min(60000, maxPayload + 960) bytes.
    @Test func namesSplitWhereTheSpecSays() {
        var configuration = Broker.Configuration(ownerUID: 1000, daemonPID: 1, server: "t", startTime: 0)
        configuration.bounds.maxPayload = 0
        var harness = BrokerHarness()
        harness.broker = Broker(configuration: configuration)
        let id = harness.connect(1)
        // 101 bytes each in `names`: 9 fit in 960, a 10th does not.
        let names = (0..<12).map { "n\($0 < 10 ? "0" : "")\($0)." + String(repeating: "x", count: 96) }
        for (index, name) in names.enumerated() { harness.subscribe(id, UInt32(index + 1), name) }
        harness.send(.names(.init(request: 8)), from: id)
        let frames = harness.output(of: id).suffix(2)
        #expect(
            Array(frames) == [
                .namesReport(.init(request: 8, names: Array(names[0..<9]), more: true)),
                .namesReport(.init(request: 8, names: Array(names[9...]), more: false)),
            ]
        )
        var empty = BrokerHarness()
        let lonely = empty.connect(1)
        empty.send(.names(.init(request: 2)), from: lonely)
        #expect(empty.output(of: lonely) == [.namesReport(.init(request: 2, names: [], more: false))])
    }

    /// Point 7 and the queue: a DROPPED notice never jumps ahead of a WELCOME that has not been written, even for a
    /// client that pipelined frames after HELLO.
    @Test func aDroppedNoticeNeverPrecedesWelcome() {
        var harness = BrokerHarness(queueBytes: 100)
        let publisher = harness.connect(1)
        let id = ConnectionID(2)
        harness.open(id, sender: BrokerHarness.owner)
        harness.send(.hello(.init(client: "pipelined")), from: id)
        harness.subscribe(id, 1, "a")
        // Too big for the queue: the new frame itself is dropped, and a notice is owed.
        harness.post(publisher, "a", String(repeating: "p", count: 200))
        let frames = harness.output(of: id)
        guard case .welcome? = frames.first else {
            Issue.record("the first frame is not WELCOME: \(frames)")
            return
        }
        #expect(frames.dropFirst().first == .dropped(.init(count: 1, firstSequence: 1, lastSequence: 1)))
    }

    /// Point 12: under DISCONNECT, no DROPPED notice counts what the overflow discards; SLOW_CONSUMER, with request
    /// 0, is the last frame.
    @Test func noDroppedNoticePrecedesSlowConsumer() {
        var harness = BrokerHarness(queueBytes: 300)
        let publisher = harness.connect(1)
        let strict = harness.connect(2)
        harness.subscribe(strict, 1, "n", overflow: .disconnect)
        _ = harness.output(of: strict)
        for _ in 0..<10 { harness.post(publisher, "n", "0123456789") }
        let frames = harness.output(of: strict)
        #expect(!frames.contains { if case .dropped = $0 { true } else { false } })
        #expect(finalError(frames)?.code == .slowConsumer)
        #expect(finalError(frames)?.request == 0)
    }

    /// Point 14: clearing frees a --max-retained slot at once, and a clear is never refused at the bound.
    @Test func clearingARetainedValueFreesItsSlot() {
        var harness = BrokerHarness(maxRetained: 1)
        let id = harness.connect(1)
        harness.post(id, "a", "1", retain: true, request: 1)
        harness.post(id, "never.set", "", retain: true, request: 2)
        harness.post(id, "a", "", retain: true, request: 3)
        harness.post(id, "b", "2", retain: true, request: 4)
        #expect(harness.output(of: id).map(\.type) == [.ack, .ack, .ack, .ack])
        #expect(!harness.broker.isClosing(id))
        #expect(harness.broker.statusReport(request: 1).retained == 1)
    }
}
