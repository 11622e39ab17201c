import HeraldMQTT
import Testing

/// Golden packets: the bytes were built by hand from the packet layouts of OASIS MQTT Version 5.0 (§3.1 to §3.14:
/// fixed header, variable header, properties, payload), field by field as the comments show; CONNECT's variable
/// header is the specification's own example of §3.1.2.11 (flags 0xCE, Keep
/// Alive 10, Session Expiry Interval 10). Each is checked both ways: decoding gives the packet, encoding gives the
/// bytes.
struct PacketVectorTests {
    static let vectors: [(String, Packet, [UInt8])] = [
        (
            "CONNECT with will, user name and password",
            .connect(
                .init(
                    clientIdentifier: "c",
                    cleanStart: true,
                    keepAlive: 10,
                    properties: {
                        var p = Properties()
                        p.sessionExpiryInterval = 10
                        return p
                    }(),
                    will: .init(
                        topic: "a/b",
                        payload: Array("ok".utf8),
                        qos: .atLeastOnce,
                        retain: false,
                        properties: {
                            var p = Properties()
                            p.payloadFormatIndicator = 1
                            p.willDelayInterval = 5
                            return p
                        }()
                    ),
                    username: "u",
                    password: [0x70, 0x77]
                )
            ),
            [
                0x10, 0x2B,  // CONNECT, Remaining Length 43
                0x00, 0x04, 0x4D, 0x51, 0x54, 0x54, 0x05,  // "MQTT", version 5
                0xCE,  // User Name, Password, Will QoS 1, Will Flag, Clean Start
                0x00, 0x0A,  // Keep Alive 10
                0x05, 0x11, 0x00, 0x00, 0x00, 0x0A,  // properties: Session Expiry Interval 10
                0x00, 0x01, 0x63,  // Client Identifier "c"
                0x07, 0x01, 0x01, 0x18, 0x00, 0x00, 0x00, 0x05,  // will properties: Payload Format 1, Will Delay 5
                0x00, 0x03, 0x61, 0x2F, 0x62,  // Will Topic "a/b"
                0x00, 0x02, 0x6F, 0x6B,  // Will Payload "ok"
                0x00, 0x01, 0x75,  // User Name "u"
                0x00, 0x02, 0x70, 0x77,  // Password
            ]
        ),
        (
            "CONNECT, the least: empty client identifier, no will",
            .connect(.init(clientIdentifier: "", cleanStart: false, keepAlive: 0)),
            [0x10, 0x0D, 0x00, 0x04, 0x4D, 0x51, 0x54, 0x54, 0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00]
        ),
        (
            "CONNACK with the properties a broker announces",
            .connack(
                .init(
                    sessionPresent: true,
                    reasonCode: .success,
                    properties: {
                        var p = Properties()
                        p.assignedClientIdentifier = "id"
                        p.serverKeepAlive = 60
                        p.receiveMaximum = 20
                        p.topicAliasMaximum = 10
                        return p
                    }()
                )
            ),
            [
                0x20, 0x11,  // CONNACK, Remaining Length 17
                0x01, 0x00,  // Session Present, Success
                0x0E,  // property length 14
                0x12, 0x00, 0x02, 0x69, 0x64,  // Assigned Client Identifier "id"
                0x13, 0x00, 0x3C,  // Server Keep Alive 60
                0x21, 0x00, 0x14,  // Receive Maximum 20
                0x22, 0x00, 0x0A,  // Topic Alias Maximum 10
            ]
        ),
        (
            "CONNACK refusing: Not authorized",
            .connack(.init(reasonCode: .notAuthorized)),
            [0x20, 0x03, 0x00, 0x87, 0x00]
        ),
        (
            "PUBLISH QoS 0, the variable header example of §3.3.2.3 with a payload",
            .publish(.init(topic: "a/b", payload: Array("hi".utf8))),
            [0x30, 0x08, 0x00, 0x03, 0x61, 0x2F, 0x62, 0x00, 0x68, 0x69]
        ),
        (
            "PUBLISH QoS 1, DUP, RETAIN, Content Type and a User Property",
            .publish(
                .init(
                    topic: "a/b",
                    payload: Array("{}".utf8),
                    qos: .atLeastOnce,
                    retain: true,
                    dup: true,
                    packetIdentifier: 10,
                    properties: {
                        var p = Properties()
                        p.contentType = "application/json"
                        p.userProperties = [UserProperty("k", "v")]
                        return p
                    }()
                )
            ),
            [
                0x3B, 0x24,  // PUBLISH DUP QoS 1 RETAIN, Remaining Length 36
                0x00, 0x03, 0x61, 0x2F, 0x62,  // Topic Name "a/b"
                0x00, 0x0A,  // Packet Identifier 10
                0x1A,  // property length 26
                0x03, 0x00, 0x10,  // Content Type, 16 bytes:
                0x61, 0x70, 0x70, 0x6C, 0x69, 0x63, 0x61, 0x74, 0x69, 0x6F, 0x6E, 0x2F, 0x6A, 0x73, 0x6F, 0x6E,
                0x26, 0x00, 0x01, 0x6B, 0x00, 0x01, 0x76,  // User Property "k" = "v"
                0x7B, 0x7D,  // payload "{}"
            ]
        ),
        (
            "PUBLISH retained and empty: clears the topic's retained message",
            .publish(.init(topic: "t", payload: [], retain: true)),
            [0x31, 0x04, 0x00, 0x01, 0x74, 0x00]
        ),
        (
            "PUBACK, Success without properties: Remaining Length 2 (§3.4.2.1)",
            .puback(.init(packetIdentifier: 10)),
            [0x40, 0x02, 0x00, 0x0A]
        ),
        (
            "PUBACK with a reason code and no properties: Remaining Length 3",
            .puback(.init(packetIdentifier: 10, reasonCode: .noMatchingSubscribers)),
            [0x40, 0x03, 0x00, 0x0A, 0x10]
        ),
        (
            "PUBACK with a Reason String",
            .puback(
                .init(
                    packetIdentifier: 10,
                    reasonCode: .unspecifiedError,
                    properties: {
                        var p = Properties()
                        p.reasonString = "no"
                        return p
                    }()
                )
            ),
            [0x40, 0x09, 0x00, 0x0A, 0x80, 0x05, 0x1F, 0x00, 0x02, 0x6E, 0x6F]
        ),
        (
            "PUBREL: fixed header flags 0010",
            .pubrel(.init(packetIdentifier: 7)),
            [0x62, 0x02, 0x00, 0x07]
        ),
        (
            "SUBSCRIBE with a Subscription Identifier and every option",
            .subscribe(
                .init(
                    packetIdentifier: 1,
                    subscriptions: [
                        .init(
                            topicFilter: "a/+",
                            qos: .atLeastOnce,
                            noLocal: true,
                            retainAsPublished: true,
                            retainHandling: .doNotSend
                        ),
                        .init(topicFilter: "#"),
                    ],
                    properties: {
                        var p = Properties()
                        p.subscriptionIdentifiers = [5]
                        return p
                    }()
                )
            ),
            [
                0x82, 0x0F,  // SUBSCRIBE (flags 0010), Remaining Length 15
                0x00, 0x01,  // Packet Identifier 1
                0x02, 0x0B, 0x05,  // properties: Subscription Identifier 5
                0x00, 0x03, 0x61, 0x2F, 0x2B,  // "a/+"
                0x2D,  // Retain Handling 2, Retain As Published, No Local, QoS 1
                0x00, 0x01, 0x23, 0x00,  // "#", options 0
            ]
        ),
        (
            "SUBACK granting QoS 1 and refusing the second filter",
            .suback(.init(packetIdentifier: 1, reasonCodes: [.grantedQoS1, .notAuthorized])),
            [0x90, 0x05, 0x00, 0x01, 0x00, 0x01, 0x87]
        ),
        (
            "UNSUBSCRIBE",
            .unsubscribe(.init(packetIdentifier: 2, topicFilters: ["a/+"])),
            [0xA2, 0x08, 0x00, 0x02, 0x00, 0x00, 0x03, 0x61, 0x2F, 0x2B]
        ),
        (
            "UNSUBACK: No subscription existed",
            .unsuback(.init(packetIdentifier: 2, reasonCodes: [.noSubscriptionExisted])),
            [0xB0, 0x04, 0x00, 0x02, 0x00, 0x11]
        ),
        ("PINGREQ", .pingreq, [0xC0, 0x00]),
        ("PINGRESP", .pingresp, [0xD0, 0x00]),
        ("DISCONNECT, Normal disconnection: Remaining Length 0 (§3.14.2.1)", .disconnect(.init()), [0xE0, 0x00]),
        ("DISCONNECT, Session taken over", .disconnect(.init(reasonCode: .sessionTakenOver)), [0xE0, 0x01, 0x8E]),
        (
            "DISCONNECT with will, Session Expiry Interval 0",
            .disconnect(
                .init(
                    reasonCode: .disconnectWithWillMessage,
                    properties: {
                        var p = Properties()
                        p.sessionExpiryInterval = 0
                        return p
                    }()
                )
            ),
            [0xE0, 0x07, 0x04, 0x05, 0x11, 0x00, 0x00, 0x00, 0x00]
        ),
        ("AUTH, Success", .auth(.init()), [0xF0, 0x00]),
    ]

    @Test(arguments: vectors)
    func decodesTheVector(name: String, packet: Packet, bytes: [UInt8]) throws {
        #expect(try Packet.decode(bytes) == packet, "\(name)")
    }

    @Test(arguments: vectors)
    func encodesTheVector(name: String, packet: Packet, bytes: [UInt8]) throws {
        #expect(try packet.encode() == bytes, "\(name)")
    }

    /// §1.5.4's example: "A" followed by U+2A6D4, a character outside the Basic Multilingual Plane.
    @Test func decodesTheSpecificationsStringExample() throws {
        let packet = try Packet.decode([0x30, 0x08, 0x00, 0x05, 0x41, 0xF0, 0xAA, 0x9B, 0x94, 0x00])
        #expect(packet == .publish(.init(topic: "A\u{2A6D4}", payload: [])))
    }

    @Test func acceptsTheLongFormsOfAcknowledgementsAndKeepsTheirMeaning() throws {
        // A PUBACK that spells out Success and an empty property section means what the two-byte form means.
        #expect(try Packet.decode([0x40, 0x04, 0x00, 0x0A, 0x00, 0x00]) == .puback(.init(packetIdentifier: 10)))
        #expect(try Packet.decode([0xE0, 0x02, 0x00, 0x00]) == .disconnect(.init()))
    }

    @Test func keepsRepeatedUserPropertiesAndSubscriptionIdentifiersInOrder() throws {
        var properties = Properties()
        properties.userProperties = [UserProperty("a", "1"), UserProperty("b", "2"), UserProperty("a", "3")]
        properties.subscriptionIdentifiers = [3, 200_000]
        let packet = Packet.publish(.init(topic: "x", payload: [1], properties: properties))
        let decoded = try Packet.decode(try packet.encode())
        #expect(decoded == packet)
        guard case .publish(let publish) = decoded else {
            Issue.record("not a PUBLISH")
            return
        }
        #expect(publish.properties.userProperty("a") == "1")
        #expect(publish.properties.subscriptionIdentifiers == [3, 200_000])
    }
}
