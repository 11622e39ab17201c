import HeraldBroker
import HeraldWire
import Testing

/// The broker driven as heraldd's loop drives it, one event at a time (bytes read, output written, a turn ending),
/// asserting the actions each event appends.
struct BrokerActionsTests {
    private static let owner = Sender(pid: 100, uid: 1000, gid: 1000)

    private func makeBroker(queueBytes: Int = 1 << 20) -> Broker {
        var configuration = Broker.Configuration(ownerUID: 1000, daemonPID: 42, server: "heraldd test", startTime: 5)
        configuration.bounds.queueBytes = queueBytes
        return Broker(configuration: configuration)
    }

    /// Hands `bytes` to the broker as one read and returns the actions it appended.
    private func read(_ bytes: [UInt8], on id: ConnectionID, _ broker: inout Broker) -> [BrokerAction] {
        var actions: [BrokerAction] = []
        bytes.withUnsafeBytes { _ = broker.bytesRead($0, on: id, now: 1_000, into: &actions) }
        return actions
    }

    /// Writes everything queued for `id` (as a socket that takes it all would), then reports the writes done.
    private func writeAll(_ id: ConnectionID, _ broker: inout Broker) -> [BrokerAction] {
        while broker.hasOutput(id) {
            var count = 0
            broker.pendingOutput(for: id, maxChunks: 64) { count += $0.count }
            broker.didWrite(count, to: id)
        }
        var actions: [BrokerAction] = []
        broker.writesDone(on: id, socketFull: false, now: 1_000, into: &actions)
        return actions
    }

    private func turnEnding(_ broker: inout Broker) -> [BrokerAction] {
        var actions: [BrokerAction] = []
        broker.turnEnding(into: &actions)
        return actions
    }

    private func open(_ raw: Int, _ broker: inout Broker, sender: Sender = owner) -> ConnectionID {
        let id = ConnectionID(raw)
        var actions: [BrokerAction] = []
        broker.connectionOpened(id, sender: sender, into: &actions)
        #expect(actions.isEmpty)
        return id
    }

    private func hello() -> [UInt8] { Frame.hello(.init(client: "test")).encoded() }

    @Test func aHelloEndsTheHandshakeAndAsksForItsAnswerToBeWritten() {
        var broker = makeBroker()
        let id = open(1, &broker)
        #expect(read(hello(), on: id, &broker) == [.handshakeEnded(id), .watch(id, reading: true, writing: true)])
        #expect(turnEnding(&broker) == [.write(id)])
        #expect(turnEnding(&broker).isEmpty)
        #expect(writeAll(id, &broker) == [.watch(id, reading: true, writing: false)])
        // Nothing changed since: nothing to say.
        #expect(writeAll(id, &broker).isEmpty)
    }

    @Test func aPeerOfAnotherUserIsToldToCloseAfterItsError() {
        var broker = makeBroker()
        var actions: [BrokerAction] = []
        broker.connectionOpened(ConnectionID(3), sender: Sender(pid: 7, uid: 2000, gid: 2000), into: &actions)
        #expect(actions == [.closeAfterFlush(ConnectionID(3))])
        actions.removeAll()
        broker.closingBegan(on: ConnectionID(3), into: &actions)
        #expect(actions == [.watch(ConnectionID(3), reading: false, writing: true)])
        #expect(writeAll(ConnectionID(3), &broker) == [.close(ConnectionID(3))])
    }

    @Test func aFrameCutAcrossReadsIsHandledWhenItsLastByteArrives() {
        var broker = makeBroker()
        let id = open(1, &broker)
        let bytes = hello()
        #expect(read(Array(bytes[..<5]), on: id, &broker).isEmpty)
        #expect(!broker.hasOutput(id))
        #expect(
            read(Array(bytes[5...]), on: id, &broker) == [
                .handshakeEnded(id), .watch(id, reading: true, writing: true),
            ]
        )
    }

    @Test func aProtocolViolationIsReportedAndClosesAfterTheError() {
        var broker = makeBroker()
        let id = open(1, &broker)
        _ = read(hello(), on: id, &broker)
        _ = writeAll(id, &broker)
        // A frame too short for its header.
        let actions = read([1, 0, 0, 0, 0xEE], on: id, &broker)
        guard case .protocolViolation(id, let error) = actions.first else {
            Issue.record("no protocol violation reported: \(actions)")
            return
        }
        #expect(error.code == .malformedFrame)
        #expect(Array(actions.dropFirst()) == [.closeAfterFlush(id), .watch(id, reading: false, writing: true)])
        #expect(writeAll(id, &broker) == [.close(id)])
    }

    @Test func byeIsToldToCloseOnceItsOutputIsWritten() {
        var broker = makeBroker()
        let id = open(1, &broker)
        _ = read(hello(), on: id, &broker)
        _ = writeAll(id, &broker)
        let ping = Frame.ping(.init(request: 9)).encoded()
        // The ACK of the PING is queued: the connection stops being read and waits to be written.
        #expect(
            read(ping + Frame.bye.encoded(), on: id, &broker) == [
                .closeAfterFlush(id), .watch(id, reading: false, writing: true),
            ]
        )
        // The broker has said it already: the owner's closing adds nothing.
        var actions: [BrokerAction] = []
        broker.closingBegan(on: id, into: &actions)
        #expect(actions.isEmpty)
        #expect(writeAll(id, &broker) == [.close(id)])
    }

    @Test func aQueuePastHalfItsBoundIsWrittenBeforeTheRestOfTheRead() {
        let post = Frame.post(
            .init(request: 0, name: "flood", payload: [UInt8](repeating: 1, count: 100), retain: false)
        )
        let frame = Frame.notify(
            .init(
                sequence: 1,
                time: 1,
                pid: 1,
                uid: 1,
                gid: 1,
                name: "flood",
                payload: [UInt8](repeating: 1, count: 100)
            )
        )
        var broker = makeBroker(queueBytes: 10 * frame.encodedSize)
        let poster = open(1, &broker)
        let subscriber = open(2, &broker)
        _ = read(hello(), on: poster, &broker)
        _ = read(hello(), on: subscriber, &broker)
        let subscribe = Frame.subscribe(.init(subscription: 1, pattern: try! Pattern("flood"), overflow: .dropOldest))
        _ = read(subscribe.encoded(), on: subscriber, &broker)
        _ = writeAll(poster, &broker)
        _ = writeAll(subscriber, &broker)
        _ = turnEnding(&broker)

        let posts = (0..<20).flatMap { _ in post.encoded() }
        var actions: [BrokerAction] = []
        let handled = posts.withUnsafeBytes { broker.bytesRead($0, on: poster, now: 1_000, into: &actions) }
        // The sixth post takes the queue past half: it is to be written now, and the rest of the read waits.
        #expect(handled == 6)
        #expect(actions == [.write(subscriber), .readAgain(poster)])
        #expect(writeAll(subscriber, &broker) == [])
        actions.removeAll()
        #expect(broker.readBuffered(on: poster, now: 1_000, into: &actions) == 6)
        #expect(actions == [.write(subscriber), .readAgain(poster)])
    }

    @Test func aPendingWillAsksForAWakeUpOnce() {
        var broker = makeBroker()
        let id = open(1, &broker)
        _ = read(hello(), on: id, &broker)
        let will = Frame.will(
            .init(request: 7, delayMilliseconds: 1000, name: "presence.alice", payload: [1], retain: false)
        )
        _ = read(will.encoded(), on: id, &broker)
        broker.connectionClosed(id, monotonicNow: 5_000_000_000)
        var actions: [BrokerAction] = []
        broker.turnEnded(into: &actions)
        #expect(actions == [.wakeAt(6_000_000_000)])
        actions.removeAll()
        broker.turnEnded(into: &actions)
        #expect(actions.isEmpty)
    }

    @Test func aPluginRequestIsHandedOverAndAnsweredBeforeTheFramesAfterIt() {
        var broker = makeBroker()
        let id = open(1, &broker)
        _ = read(hello(), on: id, &broker)
        _ = writeAll(id, &broker)
        let plugin = Frame.Plugin(request: 5, action: .restart, name: "session")
        let bytes = Frame.plugin(plugin).encoded() + Frame.ping(.init(request: 6)).encoded()
        let actions = read(bytes, on: id, &broker)
        guard case .pluginRequest(let request) = actions.first else {
            Issue.record("no PLUGIN request handed over: \(actions)")
            return
        }
        #expect(request.connection == id && request.frame == plugin)
        #expect(Array(actions.dropFirst()) == [.readAgain(id)])
        var answered: [BrokerAction] = []
        broker.answer(request, error: nil, into: &answered)
        #expect(answered.isEmpty)
        var more: [BrokerAction] = []
        #expect(broker.readBuffered(on: id, now: 1_000, into: &more) == 1)
        #expect(more == [.watch(id, reading: true, writing: true)])
        // The answer went out before the PING's ACK: in the order of the requests.
        var frames: [Frame] = []
        var decoder = FrameDecoder(role: .client)
        while broker.hasOutput(id) {
            broker.pendingOutput(for: id, maxChunks: 64) { decoder.append($0) }
            var count = 0
            broker.pendingOutput(for: id, maxChunks: 64) { count += $0.count }
            broker.didWrite(count, to: id)
        }
        while let frame = try! decoder.next() { frames.append(frame) }
        #expect(frames == [.ack(.init(request: 5, sequence: 0)), .ack(.init(request: 6, sequence: 0))])
    }

    @Test func outputLeftAfterAWriteThatTookAllItWasOfferedIsWrittenAgainAtOnce() {
        var broker = makeBroker()
        let id = open(1, &broker)
        _ = read(hello(), on: id, &broker)
        _ = turnEnding(&broker)
        // The socket takes the first byte, all it was offered: the rest needs no wait for writability.
        broker.didWrite(1, to: id)
        var actions: [BrokerAction] = []
        broker.writesDone(on: id, socketFull: false, now: 1_000, into: &actions)
        #expect(actions == [.write(id)])
        // A full socket: the rest waits for room, as the watch already asks.
        actions.removeAll()
        broker.writesDone(on: id, socketFull: true, now: 1_000, into: &actions)
        #expect(actions.isEmpty)
    }

    @Test func aBusyTurnWithOutputForSeveralConnectionsAsksForAnotherRoundOfReads() {
        var broker = makeBroker()
        let publisher = open(1, &broker)
        let first = open(2, &broker)
        let second = open(3, &broker)
        for id in [publisher, first, second] {
            _ = read(hello(), on: id, &broker)
            _ = writeAll(id, &broker)
        }
        for (id, subscription) in [(first, UInt32(1)), (second, 2)] {
            let subscribe = Frame.subscribe(.init(subscription: subscription, pattern: try! Pattern("n")))
            _ = read(subscribe.encoded(), on: id, &broker)
            _ = writeAll(id, &broker)
        }
        _ = turnEnding(&broker)
        var actions: [BrokerAction] = []
        let post = Frame.post(.init(name: "n", payload: [1]))
        let few = Array(repeating: post.encoded(), count: Broker.framesForAnotherRound - 1).flatMap { $0 }
        _ = read(few, on: publisher, &broker)
        broker.readRoundEnded(into: &actions)
        #expect(actions.isEmpty, "asked for another round after \(Broker.framesForAnotherRound - 1) frames")
        _ = read(post.encoded(), on: publisher, &broker)
        broker.readRoundEnded(into: &actions)
        #expect(actions == [.readAnotherRound])
        // A new turn counts from nothing.
        #expect(turnEnding(&broker) == [.write(first), .write(second)])
        actions.removeAll()
        _ = read(post.encoded(), on: publisher, &broker)
        broker.readRoundEnded(into: &actions)
        #expect(actions.isEmpty)
    }

    @Test func aHelloTimeoutAndTooManyIncompleteConnectionsCloseOnlyConnectionsStillWaiting() {
        var broker = makeBroker()
        let waiting = open(1, &broker)
        let greeted = open(2, &broker)
        _ = read(hello(), on: greeted, &broker)
        var actions: [BrokerAction] = []
        broker.helloTimedOut(greeted, afterMilliseconds: 5, into: &actions)
        broker.tooManyIncompleteConnections(greeted, limit: 1, into: &actions)
        #expect(actions.isEmpty)
        broker.helloTimedOut(waiting, afterMilliseconds: 5, into: &actions)
        #expect(actions == [.closeAfterFlush(waiting)])
    }

}
