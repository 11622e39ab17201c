import HeraldMQTT
import Testing

/// Input a broker (or anyone) could send that breaks the specification: each is a typed error carrying the reason
/// code to disconnect with, never a trap.
struct MalformedPacketTests {
    static let cases: [(String, [UInt8], ReasonCode)] = [
        ("Remaining Length in a longer form than needed", [0xC0, 0x80, 0x00], .malformedPacket),
        ("Remaining Length of five bytes", [0x30, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F], .malformedPacket),
        ("a topic length past the packet's end", [0x30, 0x03, 0x00, 0x05, 0x61], .malformedPacket),
        ("a packet identifier cut off", [0x32, 0x04, 0x00, 0x01, 0x61, 0x00], .malformedPacket),
        ("a property length past the packet's end", [0x30, 0x05, 0x00, 0x01, 0x61, 0x05, 0x11], .malformedPacket),
        (
            "a four-byte property cut off inside its section",
            [0x30, 0x08, 0x00, 0x01, 0x61, 0x02, 0x02, 0x00, 0x00, 0x00], .malformedPacket
        ),
        ("a string that is not UTF-8", [0x30, 0x05, 0x00, 0x02, 0xC3, 0x28, 0x00], .malformedPacket),
        ("a string with a UTF-16 surrogate", [0x30, 0x06, 0x00, 0x03, 0xED, 0xA0, 0x80, 0x00], .malformedPacket),
        ("a string containing U+0000", [0x30, 0x05, 0x00, 0x02, 0x61, 0x00, 0x00], .malformedPacket),
        ("packet type 0", [0x00, 0x00], .malformedPacket),
        ("PINGREQ with a reserved flag set", [0xC1, 0x00], .malformedPacket),
        ("SUBSCRIBE without its fixed flags 0010", [0x80, 0x06, 0x00, 0x01, 0x00, 0x00, 0x01, 0x23], .malformedPacket),
        ("CONNACK with a reserved acknowledge flag", [0x20, 0x03, 0x02, 0x00, 0x00], .malformedPacket),
        ("PUBLISH at QoS 3", [0x36, 0x06, 0x00, 0x01, 0x61, 0x00, 0x01, 0x00], .malformedPacket),
        ("PUBLISH at QoS 0 with DUP", [0x38, 0x04, 0x00, 0x01, 0x61, 0x00], .malformedPacket),
        (
            "PUBLISH at QoS 1 with Packet Identifier 0", [0x32, 0x06, 0x00, 0x01, 0x61, 0x00, 0x00, 0x00],
            .protocolError
        ),
        ("PUBLISH to a topic with a wildcard", [0x30, 0x04, 0x00, 0x01, 0x23, 0x00], .topicNameInvalid),
        ("PUBLISH to an empty topic without an alias", [0x30, 0x03, 0x00, 0x00, 0x00], .protocolError),
        (
            "PUBLISH with Session Expiry Interval, which it may not carry",
            [0x30, 0x09, 0x00, 0x01, 0x61, 0x05, 0x11, 0x00, 0x00, 0x00, 0x01], .malformedPacket
        ),
        (
            "PUBLISH with Content Type twice",
            [0x30, 0x0C, 0x00, 0x01, 0x61, 0x08, 0x03, 0x00, 0x01, 0x78, 0x03, 0x00, 0x01, 0x79], .protocolError
        ),
        ("PUBLISH with an unknown property 0x7F", [0x30, 0x06, 0x00, 0x01, 0x61, 0x02, 0x7F, 0x00], .malformedPacket),
        ("PUBLISH with Payload Format Indicator 2", [0x30, 0x06, 0x00, 0x01, 0x61, 0x02, 0x01, 0x02], .protocolError),
        ("PUBLISH with Topic Alias 0", [0x30, 0x07, 0x00, 0x01, 0x61, 0x03, 0x23, 0x00, 0x00], .protocolError),
        ("CONNACK with Receive Maximum 0", [0x20, 0x06, 0x00, 0x00, 0x03, 0x21, 0x00, 0x00], .protocolError),
        (
            "CONNACK with Session Present and a failure",
            [0x20, 0x03, 0x01, 0x87, 0x00], .protocolError
        ),
        (
            "SUBSCRIBE with two Subscription Identifiers",
            [0x82, 0x0B, 0x00, 0x01, 0x04, 0x0B, 0x01, 0x0B, 0x02, 0x00, 0x01, 0x23, 0x00], .protocolError
        ),
        (
            "SUBSCRIBE with reserved option bits", [0x82, 0x07, 0x00, 0x01, 0x00, 0x00, 0x01, 0x23, 0x40],
            .malformedPacket
        ),
        ("SUBSCRIBE at QoS 3", [0x82, 0x07, 0x00, 0x01, 0x00, 0x00, 0x01, 0x23, 0x03], .malformedPacket),
        ("SUBSCRIBE with Retain Handling 3", [0x82, 0x07, 0x00, 0x01, 0x00, 0x00, 0x01, 0x23, 0x30], .protocolError),
        ("SUBSCRIBE with no topic filter", [0x82, 0x03, 0x00, 0x01, 0x00], .protocolError),
        (
            "SUBSCRIBE with '#' before the last level",
            [0x82, 0x09, 0x00, 0x01, 0x00, 0x00, 0x03, 0x23, 0x2F, 0x61, 0x00], .topicFilterInvalid
        ),
        ("SUBACK with Packet Identifier 0", [0x90, 0x04, 0x00, 0x00, 0x00, 0x00], .protocolError),
        ("SUBACK with no reason code", [0x90, 0x03, 0x00, 0x01, 0x00], .protocolError),
        (
            "UNSUBACK with a Subscription Identifier", [0xB0, 0x06, 0x00, 0x01, 0x02, 0x0B, 0x01, 0x00],
            .malformedPacket
        ),
        ("PINGRESP with a body", [0xD0, 0x01, 0x00], .malformedPacket),
        ("DISCONNECT with a Topic Alias", [0xE0, 0x05, 0x00, 0x03, 0x23, 0x00, 0x01], .malformedPacket),
        ("PUBACK with bytes after its properties", [0x40, 0x05, 0x00, 0x01, 0x00, 0x00, 0xFF], .malformedPacket),
        (
            "CONNECT for MQTT 3.1.1",
            [0x10, 0x0D, 0x00, 0x04, 0x4D, 0x51, 0x54, 0x54, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00],
            .unsupportedProtocolVersion
        ),
        (
            "CONNECT with the reserved flag",
            [0x10, 0x0D, 0x00, 0x04, 0x4D, 0x51, 0x54, 0x54, 0x05, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00],
            .malformedPacket
        ),
        (
            "CONNECT with Will QoS 3",
            [0x10, 0x0D, 0x00, 0x04, 0x4D, 0x51, 0x54, 0x54, 0x05, 0x1C, 0x00, 0x00, 0x00, 0x00, 0x00],
            .malformedPacket
        ),
        (
            "CONNECT with Will Retain and no will",
            [0x10, 0x0D, 0x00, 0x04, 0x4D, 0x51, 0x54, 0x54, 0x05, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00],
            .malformedPacket
        ),
        (
            "CONNECT whose will properties carry a Topic Alias",
            [
                0x10, 0x16, 0x00, 0x04, 0x4D, 0x51, 0x54, 0x54, 0x05, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00,
                0x03, 0x23, 0x00, 0x01, 0x00, 0x01, 0x74, 0x00, 0x00,
            ],
            .malformedPacket
        ),
    ]

    @Test(arguments: cases)
    func refusesWithTheReasonCodeToDisconnectWith(name: String, bytes: [UInt8], code: ReasonCode) {
        do {
            let packet = try Packet.decode(bytes)
            Issue.record("\(name): decoded as \(packet)")
        } catch {
            #expect(error.code == code, "\(name): \(error)")
        }
    }

    @Test func namesTheFieldThatWasWrong() {
        #expect(throws: PacketError(.malformedPacket, "PUBLISH may not carry property 0x11 (Session Expiry Interval)"))
        {
            try Packet.decode([0x30, 0x09, 0x00, 0x01, 0x61, 0x05, 0x11, 0x00, 0x00, 0x00, 0x01])
        }
        #expect(throws: PacketError(.protocolError, "PUBLISH carries property 0x03 (Content Type) more than once")) {
            try Packet.decode([0x30, 0x0C, 0x00, 0x01, 0x61, 0x08, 0x03, 0x00, 0x01, 0x78, 0x03, 0x00, 0x01, 0x79])
        }
        #expect(throws: PacketError(.malformedPacket, "PUBLISH has QoS 3")) {
            try Packet.decode([0x36, 0x06, 0x00, 0x01, 0x61, 0x00, 0x01, 0x00])
        }
    }

    @Test func refusesToEncodeWhatItWouldRefuseToDecode() {
        var publish = Packet.Publish(topic: "a/#", payload: [])
        #expect(throws: PacketError.self) { try Packet.publish(publish).encode() }
        publish.topic = "a\u{0}b"
        #expect(throws: PacketError.self) { try Packet.publish(publish).encode() }
        publish.topic = "a"
        publish.qos = .atLeastOnce
        #expect(throws: PacketError(.protocolError, "PUBLISH at QoS 1 has Packet Identifier 0")) {
            try Packet.publish(publish).encode()
        }
        publish.packetIdentifier = 1
        publish.properties.sessionExpiryInterval = 1
        #expect(throws: PacketError.self) { try Packet.publish(publish).encode() }
        #expect(throws: PacketError.self) {
            try Packet.subscribe(.init(packetIdentifier: 1, subscriptions: [])).encode()
        }
        #expect(throws: PacketError.self) {
            try Packet.connect(.init(clientIdentifier: String(repeating: "x", count: 65_536))).encode()
        }
    }
}
