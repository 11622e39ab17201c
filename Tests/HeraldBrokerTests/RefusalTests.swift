import HeraldBroker
import HeraldWire
import Testing

/// wire.md, "Refusals and fatal errors": every error code, in version 1 and version 2. Afterwards a version 2
/// connection refused a request answers `PING`; every other error (any in version 1, a fatal one in version 2) has
/// closed the connection.
struct RefusalTests {
    /// Makes `code` happen on a connection of `version` and returns the harness and that connection.
    static func provoke(_ code: WireError.Code, version: UInt16) -> (BrokerHarness, ConnectionID) {
        var harness = BrokerHarness(
            queueBytes: 4 * SlowSubscriberTests.frameSize,
            maxSubscriptions: 2,
            maxRetained: 1,
            maxConnections: 2,
            maxRetainedBytes: 64,
            maxWills: 0,
            maxPatternCost: 3,
            maxNames: 1
        )
        let raw = ConnectionID(9)
        switch code {
        case .unsupportedVersion:
            harness.open(raw)
            harness.send(.hello(.init(minVersion: 3, maxVersion: 4, client: "x")), from: raw)
            return (harness, raw)
        case .helloRequired:
            harness.open(raw)
            harness.send(.ping(.init(request: 1)), from: raw)
            return (harness, raw)
        case .helloTimeout:
            harness.open(raw)
            _ = harness.helloTimedOut(raw, afterMilliseconds: 5000)
            return (harness, raw)
        case .tooManyConnections:
            _ = harness.connect(1, version: version)
            _ = harness.connect(2, version: version)
            harness.open(raw)
            return (harness, raw)
        default:
            break
        }
        let id = harness.connect(9, version: version)
        switch code {
        case .malformedFrame:
            harness.read([7, 0, 0, 0, 0x06, 0, 1, 0, 0, 0, 0], from: id)
        case .frameTooLarge:
            harness.read([0xFF, 0xFF, 0xFF, 0, 0x06, 0], from: id)
        case .unknownFrameType:
            harness.read([6, 0, 0, 0, 0x70, 0, 1, 0, 0, 0], from: id)
        case .unexpectedHello:
            harness.send(.hello(.init(client: "again")), from: id)
        case .invalidName:
            var bytes = Frame.post(.init(request: 5, name: "a.b", payload: [])).encoded()
            bytes[13] = UInt8(ascii: ".")
            harness.read(bytes, from: id)
        case .invalidPattern:
            var bytes = Frame.subscribe(.init(subscription: 5, pattern: try! Pattern("a.b"))).encoded()
            bytes[13] = UInt8(ascii: ".")
            harness.read(bytes, from: id)
        case .payloadTooLarge:
            harness.send(.post(.init(request: 5, name: "a", payload: Array(repeating: 1, count: 65537))), from: id)
        case .tooManySubscriptions:
            harness.subscribe(id, 1, "a")
            harness.subscribe(id, 2, "b")
            harness.subscribe(id, 5, "c")
        case .duplicateSubscription:
            harness.subscribe(id, 5, "a")
            harness.subscribe(id, 5, "b")
        case .unknownSubscription:
            harness.send(.unsubscribe(.init(subscription: 5)), from: id)
        case .reservedName:
            harness.post(id, "herald.x", "{}", request: 5)
        case .permissionDenied:
            harness.send(.monitor(.init(request: 4)), from: id)
            harness.post(id, "a", "{}", request: 5)
        case .invalidFlags:
            harness.read([6, 0, 0, 0, 0x06, 0x01, 5, 0, 0, 0], from: id)
        case .shuttingDown:
            var actions: [BrokerAction] = []
            harness.broker.shutDown(into: &actions)
        case .invalidRequest:
            harness.send(.ping(.init(request: 0)), from: id)
        case .tooManyRetained:
            harness.post(id, "a", "1", retain: true, request: 4)
            harness.post(id, "b", "2", retain: true, request: 5)
        case .slowConsumer:
            let publisher = harness.connect(1, version: version)
            harness.subscribe(id, 1, "n", overflow: .disconnect)
            _ = harness.output(of: id)
            for _ in 0..<8 { harness.post(publisher, "n", "0123456789") }
        case .tooManyRetainedBytes:
            harness.post(id, "a", String(repeating: "x", count: 100), retain: true, request: 5)
        case .tooManyWills:
            harness.send(.will(.init(request: 5, delayMilliseconds: 0, name: "a", payload: [])), from: id)
        case .patternTooComplex:
            harness.subscribe(id, 5, "a.b.c.*")
        case .tooManyNames:
            harness.post(id, "a", "1", retain: true, request: 4)
            harness.subscribe(id, 1, "b")
            harness.send(.names(.init(request: 5)), from: id)
        case .unknownPlugin:
            let outcome = harness.send(.plugin(.init(request: 5, action: .start, name: "nope")), from: id)
            _ = harness.answer(outcome.pluginRequests[0], error: "no plugin is called nope")
        default:
            preconditionFailure("no scenario for \(code)")
        }
        return (harness, id)
    }

    @Test(arguments: WireError.Code.all, [UInt16(1), 2])
    func everyCodeIsARefusalOnlyInVersion2AndOnlyWhenItAnswersARequest(code: WireError.Code, version: UInt16) {
        var (harness, id) = Self.provoke(code, version: version)
        let errors = harness.output(of: id).compactMap { frame -> WireError? in
            if case .error(let error) = frame { return error }
            return nil
        }
        #expect(errors.map(\.code) == [code], "\(code) in version \(version)")
        let refused = version >= 2 && code.isRefusal
        #expect(errors.first?.isRefusal == refused)
        if refused {
            #expect(errors.first?.request == 5, "a refusal names its request")
            #expect(!harness.broker.isClosing(id))
            harness.send(.ping(.init(request: 77)), from: id)
            let answered = harness.output(of: id).contains {
                if case .ack(let ack) = $0 { return ack.request == 77 }
                return false
            }
            #expect(answered, "the connection answers PING after the refusal")
        } else {
            #expect(harness.broker.isClosing(id), "\(code) in version \(version) must end the connection")
            #expect(!harness.broker.wantsInput(id))
        }
    }

    /// A refusal leaves the connection as it was: its subscriptions still deliver, its will is still in place.
    @Test func aRefusalLeavesTheSubscriptionsAndTheQueueAsTheyWere() {
        var harness = BrokerHarness(maxRetained: 1)
        let client = harness.connect(1, version: 2)
        let other = harness.connect(2, version: 2)
        harness.subscribe(client, 1, "a.*")
        harness.post(client, "a.kept", "1", retain: true, request: 3)
        _ = harness.output(of: client)
        harness.post(client, "a.refused", "2", retain: true)
        harness.post(other, "a.live", "3")
        let frames = harness.output(of: client)
        #expect(
            frames.first
                == .error(
                    WireError(
                        .tooManyRetained,
                        "1 names already have a retained value, the limit is 1",
                        request: 0,
                        isRefusal: true
                    )
                )
        )
        #expect(BrokerHarness.notifications(frames) == ["a.live"], "the refused post was not delivered")
        #expect(harness.broker.statusReport(request: 1).retained == 1)
    }

    /// `QUIET`: an accepted post gets no `ACK`, a refused one its `ERROR` with the post's request.
    @Test func aQuietPostIsAnsweredOnlyWhenRefused() {
        var harness = BrokerHarness()
        let client = harness.connect(1, version: 2)
        harness.send(.post(.init(request: 8, name: "a", payload: [], quiet: true)), from: client)
        harness.send(.post(.init(request: 9, name: "herald.a", payload: [], quiet: true)), from: client)
        let frames = harness.output(of: client)
        #expect(frames.count == 1)
        guard case .error(let error) = frames.first else {
            Issue.record("expected an ERROR, got \(frames)")
            return
        }
        #expect(error.request == 9 && error.code == .reservedName && error.isRefusal)
    }

    /// Version 2 subscribers see `RETAIN` and the origin; version 1 subscribers get the plain frame of the same post.
    @Test func aMarkedPostIsEncodedForEachVersion() {
        var harness = BrokerHarness()
        let poster = harness.connect(1, version: 2)
        let old = harness.connect(2, version: 1)
        let new = harness.connect(3, version: 2)
        harness.subscribe(old, 1, "a")
        harness.subscribe(new, 1, "a")
        _ = harness.output(of: old)
        _ = harness.output(of: new)
        let origin = Frame.Origin(host: "hostb", daemon: "heraldd", sequence: 7)
        harness.send(.post(.init(name: "a", payload: [1, 2], retain: true, origin: origin)), from: poster)
        guard case .notify(let plain) = harness.output(of: old).first,
            case .notify(let marked) = harness.output(of: new).first
        else {
            Issue.record("both subscribers receive the post")
            return
        }
        #expect(!plain.retain && plain.origin == nil && plain.payload == [1, 2])
        #expect(marked.retain && marked.origin == origin && marked.payload == [1, 2])
        #expect(plain.sequence == marked.sequence)
        // The retained value keeps its origin for version 2's replays.
        harness.send(.get(.init(request: 4, name: "a")), from: new)
        harness.send(.get(.init(request: 4, name: "a")), from: old)
        guard case .notify(let replayed) = harness.output(of: new).first,
            case .notify(let replayedPlain) = harness.output(of: old).first
        else {
            Issue.record("GET answers the retained value")
            return
        }
        #expect(replayed.retained && !replayed.retain && replayed.origin == origin)
        #expect(replayedPlain.retained && replayedPlain.origin == nil)
    }
}

/// Version 2's `NO_LOCAL`: a connection's own posts do not match such a subscription.
struct NoLocalTests {
    @Test func aNoLocalSubscriptionDoesNotGetItsOwnConnectionsPosts() {
        var harness = BrokerHarness()
        let bridge = harness.connect(1, version: 2)
        let other = harness.connect(2, version: 2)
        harness.send(.subscribe(.init(subscription: 1, pattern: try! Pattern("a.*"), noLocal: true)), from: bridge)
        harness.subscribe(other, 1, "a.*")
        _ = harness.output(of: bridge)
        _ = harness.output(of: other)
        harness.post(bridge, "a.mine", "1")
        harness.post(other, "a.theirs", "2")
        #expect(BrokerHarness.notifications(harness.output(of: bridge)) == ["a.theirs"])
        #expect(BrokerHarness.notifications(harness.output(of: other)) == ["a.mine", "a.theirs"])
    }

    @Test func aSubscriptionWithoutItStillTakesTheConnectionsOwnPosts() {
        var harness = BrokerHarness()
        let client = harness.connect(1, version: 2)
        harness.send(.subscribe(.init(subscription: 1, pattern: try! Pattern("a.*"), noLocal: true)), from: client)
        harness.subscribe(client, 2, "a.kept")
        _ = harness.output(of: client)
        harness.post(client, "a.kept", "1")
        harness.post(client, "a.other", "2")
        harness.post(client, "a.retained", "3", retain: true)
        #expect(BrokerHarness.notifications(harness.output(of: client)) == ["a.kept"])
        // Once the subscription without it goes, none of its own posts come back.
        harness.send(.unsubscribe(.init(subscription: 2)), from: client)
        harness.post(client, "a.kept", "4")
        #expect(BrokerHarness.notifications(harness.output(of: client)).isEmpty)
    }

    @Test func noLocalIsInvalidFlagsInVersion1() {
        var harness = BrokerHarness()
        let client = harness.connect(1, version: 1)
        let outcome = harness.send(
            .subscribe(.init(subscription: 1, pattern: try! Pattern("a.*"), noLocal: true)),
            from: client
        )
        #expect(outcome.closesConnection)
        guard case .error(let error) = harness.output(of: client).first else {
            Issue.record("no ERROR")
            return
        }
        #expect(error.code == .invalidFlags)
    }
}
