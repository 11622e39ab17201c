import Foundation
import Herald
import HeraldMQTT
import HeraldPosix
import HeraldTestSupport
import Testing

/// One accepted connection to the bridge, read packet by packet.
final class FakeBrokerSession {
    let connection: FileDescriptor
    var decoder = PacketDecoder()
    /// Every packet read so far, in order.
    var packets: [Packet] = []

    init(_ connection: consuming FileDescriptor) {
        self.connection = connection
    }

    /// Reads until a packet satisfies `wanted` and returns it; nil when the connection ends or goes quiet for
    /// the socket's 10 s receive timeout.
    func next(where wanted: (Packet) -> Bool) throws -> Packet? {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            while let packet = try decoder.next() {
                packets.append(packet)
                if wanted(packet) { return packet }
            }
            let result = try buffer.withUnsafeMutableBytes { raw in try connection.read(into: raw) }
            guard let count = result.value, count > 0 else { return nil }
            decoder.append(contentsOf: buffer[0..<count])
        }
    }

    func send(_ packet: Packet) throws {
        try packet.encode().withUnsafeBytes { raw in _ = try connection.send(raw) }
    }

    /// Reads the CONNECT and answers CONNACK with `properties`.
    func accept(sessionPresent: Bool, properties: Properties) throws {
        let connect = try next { $0.type == .connect }
        #expect(connect != nil, "the bridge did not send CONNECT")
        try send(.connack(.init(sessionPresent: sessionPresent, properties: properties)))
    }

    /// The PUBLISH packets read so far to `topic`.
    func publishes(to topic: String) -> [Packet.Publish] {
        packets.compactMap { packet in
            if case .publish(let publish) = packet, publish.topic == topic { return publish }
            return nil
        }
    }
}

/// herald-mqtt-bridge against a small broker written in the test, for what a real mosquitto will not do on demand:
/// withhold a PUBACK, or announce a small Maximum Packet Size.
@Suite(.serialized) struct MQTTBridgeFakeBrokerTests {
    static func publish(_ packet: Packet, to topic: String) -> Packet.Publish? {
        if case .publish(let publish) = packet, publish.topic == topic { return publish }
        return nil
    }

    /// A QoS 1 message the broker never acknowledged is sent again on the next connection, with DUP set and the
    /// same Packet Identifier (§4.4); a message larger than the broker's Maximum Packet Size is never sent, and is
    /// counted as tooLarge in the bridge's state.
    @Test(.timeLimit(.minutes(2)))
    func unacknowledgedQoS1IsResentWithDUPAndTheTooLargeNeverSent() async throws {
        let listener = try TCPSocket.listen(host: "127.0.0.1", port: 0)
        let port = try TCPSocket.localPort(of: listener)
        let host = try await BridgedHost(
            hostID: "hostF",
            broker: "mqtt://127.0.0.1:\(port)",
            exports: ["x.**"],
            imports: []
        )
        var properties = Properties()
        properties.maximumPacketSize = 512
        properties.receiveMaximum = 10
        do {
            let first = FakeBrokerSession(try await MQTTBridgeTests.accept(listener))
            try first.accept(sessionPresent: false, properties: properties)
            let exporting = try await eventually(timeout: .seconds(20)) {
                host.bridge.stderr.contains("notice: exporting x.**")
            }
            #expect(exporting, "\(host.bridge.stderr)")
            let onF = try await host.connect()
            try await onF.post("x.big", payload: [UInt8](repeating: 0x61, count: 2000))
            try await onF.post("x.small", userInfo: ["n": 1])
            try await onF.flush()

            let sent = try #require(
                try first.next { Self.publish($0, to: "herald/x/small") != nil }.flatMap {
                    Self.publish($0, to: "herald/x/small")
                },
                "no PUBLISH of x.small: \(first.packets.map(\.type)); \(host.bridge.stderr)"
            )
            #expect(sent.qos == .atLeastOnce)
            #expect(!sent.dup)
            #expect(sent.packetIdentifier != 0)
            // No PUBACK: the link drops with the message in flight.
            try first.connection.shutdown(read: true, write: true)

            let second = FakeBrokerSession(try await MQTTBridgeTests.accept(listener))
            try second.accept(sessionPresent: true, properties: properties)
            let again = try #require(
                try second.next { Self.publish($0, to: "herald/x/small") != nil }.flatMap {
                    Self.publish($0, to: "herald/x/small")
                },
                "x.small was not sent again: \(second.packets.map(\.type)); \(host.bridge.stderr)"
            )
            #expect(again.dup, "the resent PUBLISH has no DUP")
            #expect(again.packetIdentifier == sent.packetIdentifier)
            #expect(again.payload == sent.payload)
            try second.send(.puback(.init(packetIdentifier: again.packetIdentifier)))

            // Never sent on either connection, and counted.
            #expect(first.publishes(to: "herald/x/big").isEmpty)
            #expect(second.publishes(to: "herald/x/big").isEmpty)
            #expect(host.bridge.stderr.contains("past the broker's Maximum Packet Size of 512"))
            let counted = try await eventually(timeout: .seconds(10)) {
                try await onF.retainedValue(of: "bridge.mqtt.hostF")?.userInfo?["tooLarge"]?.doubleValue == 1
            }
            let state = try await onF.retainedValue(of: "bridge.mqtt.hostF")?.userInfo
            #expect(counted, "bridge.mqtt.hostF: \(String(describing: state))")
            await onF.close()
            try second.connection.shutdown(read: true, write: true)
        } catch {
            Issue.record(error)
        }
        listener.close()
        await host.stop()
    }
}
