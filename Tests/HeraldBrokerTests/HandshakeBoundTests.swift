import HeraldBroker
import HeraldWire
import Testing

/// The broker's side of heraldd's handshake bounds (`--hello-timeout-ms`, `--max-incomplete-connections`): which
/// connections still await `HELLO`, and the final error each bound sends.
struct HandshakeBoundTests {
    @Test func aConnectionAwaitsHelloUntilItsWelcome() {
        var harness = BrokerHarness()
        let id = ConnectionID(1)
        #expect(harness.open(id, sender: BrokerHarness.owner).keepsConnection)
        #expect(harness.broker.isAwaitingHello(id))
        harness.send(.hello(.init(client: "test")), from: id)
        #expect(!harness.broker.isAwaitingHello(id))
    }

    @Test func aConnectionRefusedOrBrokenIsNotAwaitingHello() {
        var harness = BrokerHarness()
        let stranger = ConnectionID(1)
        #expect(
            harness.open(stranger, sender: Sender(pid: 1, uid: 4242, gid: 1)).closesConnection
        )
        #expect(!harness.broker.isAwaitingHello(stranger))
        let rude = ConnectionID(2)
        harness.open(rude, sender: BrokerHarness.owner)
        #expect(harness.send(.ping(.init(request: 1)), from: rude).closesConnection)
        #expect(!harness.broker.isAwaitingHello(rude))
    }

    @Test func aConnectionWithoutHelloTimesOutWithHelloTimeout() {
        var harness = BrokerHarness()
        let id = ConnectionID(1)
        harness.open(id, sender: BrokerHarness.owner)
        #expect(harness.helloTimedOut(id, afterMilliseconds: 5000).closesConnection)
        #expect(harness.output(of: id) == [.error(WireError(.helloTimeout, "no HELLO within 5000 ms of connecting"))])
        #expect(harness.broker.isClosing(id))
        #expect(WireError.Code.helloTimeout.rawValue == 25)
        #expect(WireError.Code.helloTimeout.description == "HELLO_TIMEOUT")
    }

    @Test func aTimeoutAfterTheHandshakeChangesNothing() {
        var harness = BrokerHarness()
        let id = harness.connect(1)
        #expect(harness.helloTimedOut(id, afterMilliseconds: 5000).keepsConnection)
        #expect(harness.tooManyIncompleteConnections(id, limit: 1).keepsConnection)
        #expect(harness.output(of: id) == [])
        #expect(!harness.broker.isClosing(id))
    }

    @Test func aConnectionPastTheIncompleteCapIsRefusedWithTooManyConnections() {
        var harness = BrokerHarness()
        let id = ConnectionID(1)
        harness.open(id, sender: BrokerHarness.owner)
        #expect(harness.tooManyIncompleteConnections(id, limit: 1024).closesConnection)
        #expect(
            harness.output(of: id) == [
                .error(
                    WireError(.tooManyConnections, "1024 connections are already waiting to complete HELLO, the limit")
                )
            ]
        )
    }
}
