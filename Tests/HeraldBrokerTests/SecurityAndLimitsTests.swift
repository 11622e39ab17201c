import HeraldBroker
import HeraldWire
import Testing

struct SecurityAndLimitsTests {
    @Test func onlyTheOwnerMayMonitorNotEvenRoot() {
        var harness = BrokerHarness()
        let root = harness.connect(1, sender: Sender(pid: 1, uid: 0, gid: 0))
        #expect(harness.send(.monitor(.init(request: 3)), from: root).closesConnection)
        guard case .error(let error) = harness.output(of: root).last else {
            Issue.record("no ERROR")
            return
        }
        #expect(error.code == .permissionDenied)
        #expect(error.reason == "only uid 1000, the session's owner, may monitor; this is uid 0")
    }

    @Test func aMonitorSeesEveryPostAndMayNotPost() {
        var harness = BrokerHarness()
        let monitor = harness.connect(1)
        harness.send(.monitor(.init(request: 3)), from: monitor)
        #expect(harness.output(of: monitor) == [.ack(.init(request: 3, sequence: 0))])
        let publisher = harness.connect(2)
        harness.post(publisher, "a")
        harness.post(publisher, "b.c.d")
        #expect(BrokerHarness.notifications(harness.output(of: monitor)) == ["a", "b.c.d"])
        #expect(harness.send(.post(.init(name: "x", payload: [])), from: monitor).closesConnection)
        guard case .error(let error) = harness.output(of: monitor).last else {
            Issue.record("no ERROR")
            return
        }
        #expect(error.code == .permissionDenied)
    }

    @Test func limitsConnectionsPerUid() {
        var harness = BrokerHarness(maxConnections: 2)
        _ = harness.connect(1)
        _ = harness.connect(2)
        let third = ConnectionID(3)
        #expect(harness.open(third, sender: BrokerHarness.owner).closesConnection)
        #expect(
            harness.output(of: third) == [
                .error(WireError(.tooManyConnections, "uid 1000 already holds 2 connections, the limit"))
            ]
        )
        // Another uid (root) has its own count, and closing frees a place.
        #expect(harness.open(ConnectionID(4), sender: Sender(pid: 1, uid: 0, gid: 0)).keepsConnection)
        harness.broker.connectionClosed(third)
        harness.broker.connectionClosed(ConnectionID(1))
        #expect(harness.open(ConnectionID(5), sender: BrokerHarness.owner).keepsConnection)
    }

    @Test func enforcesALowerNameLimitOnNamesAndPatterns() {
        var configuration = Broker.Configuration(ownerUID: 1000, daemonPID: 42, server: "t", startTime: 0)
        configuration.bounds.maxNameBytes = 8
        var harness = BrokerHarness()
        harness.broker = Broker(configuration: configuration)
        let poster = harness.connect(1)
        harness.post(poster, "short.ok")
        #expect(harness.broker.wantsInput(poster))
        harness.post(poster, "much.too.long", request: 4)
        #expect(
            harness.output(of: poster).last
                == .error(WireError(.invalidName, "name of 13 bytes is over this daemon's limit of 8", request: 4))
        )
        let subscriber = harness.connect(2)
        harness.subscribe(subscriber, 3, "pattern.**")
        #expect(
            harness.output(of: subscriber).last
                == .error(
                    WireError(.invalidPattern, "pattern of 10 bytes is over this daemon's limit of 8", request: 3)
                )
        )
    }

    @Test func sizesNamesReportsForTheClientsFrameLimit() throws {
        var configuration = Broker.Configuration(ownerUID: 1000, daemonPID: 42, server: "t", startTime: 0)
        configuration.bounds.maxPayload = 1024
        configuration.bounds.maxRetained = 100
        var harness = BrokerHarness()
        harness.broker = Broker(configuration: configuration)
        let id = harness.connect(1)
        let long = String(repeating: "n", count: 190)
        for index in 0..<20 { harness.post(id, "\(long).\(100 + index)", "v", retain: true) }
        harness.send(.names(.init(request: 9)), from: id)
        var bytes: [UInt8] = []
        while harness.broker.hasOutput(id) {
            var chunk: [UInt8] = []
            harness.broker.pendingOutput(for: id, maxChunks: 64) { chunk.append(contentsOf: $0) }
            harness.broker.didWrite(chunk.count, to: id)
            bytes += chunk
        }
        // Decoded as the library does, with the frame limit WELCOME's maxPayload implies.
        var decoder = FrameDecoder(role: .client, maxPayload: 1024)
        decoder.append(contentsOf: bytes)
        var names = 0
        while let frame = try decoder.next() {
            if case .namesReport(let report) = frame { names += report.names.count }
        }
        #expect(names == 20)
    }

    @Test func noAckFollowsTheFinalErrorOfAConnectionItsOwnPostOverflowed() {
        var harness = BrokerHarness(queueBytes: 100)
        let id = harness.connect(1)
        harness.subscribe(id, 1, "a.**", overflow: .disconnect)
        _ = harness.output(of: id)
        let payload = String(repeating: "p", count: 200)
        #expect(
            harness.send(.post(.init(request: 7, name: "a.b", payload: Array(payload.utf8))), from: id)
                .closesConnection
        )
        let frames = harness.output(of: id)
        guard case .error(let error)? = frames.last else {
            Issue.record("the last frame is not the final ERROR: \(frames)")
            return
        }
        #expect(error.code == .slowConsumer)
    }

    @Test func listsRetainedNamesAndExactSubscriptionsSorted() {
        var harness = BrokerHarness()
        let id = harness.connect(1)
        harness.post(id, "session.state", "x", retain: true)
        harness.subscribe(id, 1, "session.didBecomeActive")
        harness.subscribe(id, 2, "session.*")
        _ = harness.output(of: id)
        harness.send(.names(.init(request: 9)), from: id)
        #expect(
            harness.output(of: id) == [
                .namesReport(.init(request: 9, names: ["session.didBecomeActive", "session.state"], more: false))
            ]
        )
    }

    @Test func splitsALongNamesAnswerOverSeveralFrames() {
        var harness = BrokerHarness(maxRetained: 1000)
        let id = harness.connect(1)
        let long = String(repeating: "x", count: 200)
        for index in 0..<600 { harness.post(id, "\(long).\(1000 + index)", "v", retain: true) }
        harness.send(.names(.init(request: 9)), from: id)
        var names: [String] = []
        var flags: [Bool] = []
        for case .namesReport(let report) in harness.output(of: id) {
            names += report.names
            flags.append(report.more)
        }
        #expect(names.count == 600)
        #expect(names == names.sorted())
        #expect(flags.count >= 2)
        #expect(flags.dropLast().allSatisfy { $0 } && flags.last == false)
    }
}
