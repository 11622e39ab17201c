import HeraldMQTT
import Testing

/// Packets with every field and property set encode to bytes that decode to the same packet.
struct RoundTripTests {
    static var everyProperty: Properties {
        var p = Properties()
        p.payloadFormatIndicator = 1
        p.messageExpiryInterval = 3600
        p.contentType = "application/json"
        p.responseTopic = "reply/to"
        p.correlationData = [1, 2, 3]
        p.subscriptionIdentifiers = [1]
        p.sessionExpiryInterval = 0xFFFF_FFFF
        p.assignedClientIdentifier = "auto-1"
        p.serverKeepAlive = 30
        p.authenticationMethod = "SCRAM"
        p.authenticationData = [9]
        p.requestProblemInformation = 0
        p.willDelayInterval = 2
        p.requestResponseInformation = 1
        p.responseInformation = "resp"
        p.serverReference = "other:1883"
        p.reasonString = "because"
        p.receiveMaximum = 65_535
        p.topicAliasMaximum = 0
        p.topicAlias = 3
        p.maximumQoS = 1
        p.retainAvailable = 1
        p.userProperties = [UserProperty("herald-origin", "host-a"), UserProperty("", "")]
        p.maximumPacketSize = 1 << 20
        p.wildcardSubscriptionAvailable = 1
        p.subscriptionIdentifierAvailable = 0
        p.sharedSubscriptionAvailable = 0
        return p
    }

    /// Keeps only the properties `context` allows, as a sender would.
    static func properties(for keep: [PartialKeyPath<Properties>]) -> Properties {
        let all = everyProperty
        var p = Properties()
        for path in keep {
            switch path {
            case \Properties.payloadFormatIndicator: p.payloadFormatIndicator = all.payloadFormatIndicator
            case \Properties.messageExpiryInterval: p.messageExpiryInterval = all.messageExpiryInterval
            case \Properties.contentType: p.contentType = all.contentType
            case \Properties.responseTopic: p.responseTopic = all.responseTopic
            case \Properties.correlationData: p.correlationData = all.correlationData
            case \Properties.subscriptionIdentifiers: p.subscriptionIdentifiers = all.subscriptionIdentifiers
            case \Properties.sessionExpiryInterval: p.sessionExpiryInterval = all.sessionExpiryInterval
            case \Properties.assignedClientIdentifier: p.assignedClientIdentifier = all.assignedClientIdentifier
            case \Properties.serverKeepAlive: p.serverKeepAlive = all.serverKeepAlive
            case \Properties.authenticationMethod: p.authenticationMethod = all.authenticationMethod
            case \Properties.authenticationData: p.authenticationData = all.authenticationData
            case \Properties.requestProblemInformation: p.requestProblemInformation = all.requestProblemInformation
            case \Properties.willDelayInterval: p.willDelayInterval = all.willDelayInterval
            case \Properties.requestResponseInformation: p.requestResponseInformation = all.requestResponseInformation
            case \Properties.responseInformation: p.responseInformation = all.responseInformation
            case \Properties.serverReference: p.serverReference = all.serverReference
            case \Properties.reasonString: p.reasonString = all.reasonString
            case \Properties.receiveMaximum: p.receiveMaximum = all.receiveMaximum
            case \Properties.topicAliasMaximum: p.topicAliasMaximum = all.topicAliasMaximum
            case \Properties.topicAlias: p.topicAlias = all.topicAlias
            case \Properties.maximumQoS: p.maximumQoS = all.maximumQoS
            case \Properties.retainAvailable: p.retainAvailable = all.retainAvailable
            case \Properties.userProperties: p.userProperties = all.userProperties
            case \Properties.maximumPacketSize: p.maximumPacketSize = all.maximumPacketSize
            case \Properties.wildcardSubscriptionAvailable:
                p.wildcardSubscriptionAvailable = all.wildcardSubscriptionAvailable
            case \Properties.subscriptionIdentifierAvailable:
                p.subscriptionIdentifierAvailable = all.subscriptionIdentifierAvailable
            case \Properties.sharedSubscriptionAvailable:
                p.sharedSubscriptionAvailable = all.sharedSubscriptionAvailable
            default: Issue.record("unknown key path")
            }
        }
        return p
    }

    static let packets: [Packet] = [
        .connect(
            .init(
                clientIdentifier: "herald-bridge-a",
                cleanStart: false,
                keepAlive: 65_535,
                properties: properties(for: [
                    \.sessionExpiryInterval, \.authenticationMethod, \.authenticationData, \.requestProblemInformation,
                    \.requestResponseInformation, \.receiveMaximum, \.topicAliasMaximum, \.userProperties,
                    \.maximumPacketSize,
                ]),
                will: .init(
                    topic: "herald/$hosts/a/online",
                    payload: Array("false".utf8),
                    qos: .atLeastOnce,
                    retain: true,
                    properties: properties(for: [
                        \.payloadFormatIndicator, \.messageExpiryInterval, \.contentType, \.responseTopic,
                        \.correlationData, \.willDelayInterval, \.userProperties,
                    ])
                ),
                username: "alice",
                password: Array(repeating: 0, count: 3)
            )
        ),
        .connect(.init(clientIdentifier: "p", password: [1])),
        .connack(
            .init(
                sessionPresent: false,
                reasonCode: .serverBusy,
                properties: properties(for: [
                    \.sessionExpiryInterval, \.assignedClientIdentifier, \.serverKeepAlive, \.authenticationMethod,
                    \.authenticationData, \.responseInformation, \.serverReference, \.reasonString, \.receiveMaximum,
                    \.topicAliasMaximum, \.maximumQoS, \.retainAvailable, \.userProperties, \.maximumPacketSize,
                    \.wildcardSubscriptionAvailable, \.subscriptionIdentifierAvailable, \.sharedSubscriptionAvailable,
                ])
            )
        ),
        .publish(
            .init(
                topic: "",
                payload: Array(0...255),
                qos: .exactlyOnce,
                packetIdentifier: 65_535,
                properties: properties(for: [
                    \.payloadFormatIndicator, \.messageExpiryInterval, \.contentType, \.responseTopic,
                    \.correlationData, \.subscriptionIdentifiers, \.topicAlias, \.userProperties,
                ])
            )
        ),
        .publish(
            .init(topic: "big", payload: Array(repeating: 0xAB, count: 70_000), qos: .atLeastOnce, packetIdentifier: 2)
        ),
        .puback(.init(packetIdentifier: 1, reasonCode: .success, properties: properties(for: [\.userProperties]))),
        .pubrec(.init(packetIdentifier: 2, reasonCode: .quotaExceeded)),
        .pubcomp(.init(packetIdentifier: 3, properties: properties(for: [\.reasonString]))),
        .subscribe(
            .init(
                packetIdentifier: 4,
                subscriptions: [
                    .init(topicFilter: "herald/#", qos: .exactlyOnce, retainHandling: .sendIfNewSubscription),
                    .init(topicFilter: "+", noLocal: true),
                    .init(topicFilter: "$share/g/+/x", retainAsPublished: true),
                ],
                properties: properties(for: [\.subscriptionIdentifiers, \.userProperties])
            )
        ),
        .suback(.init(packetIdentifier: 4, reasonCodes: [.grantedQoS2, .grantedQoS0, .topicFilterInvalid])),
        .unsubscribe(
            .init(packetIdentifier: 5, topicFilters: ["a", "b/+/#"], properties: properties(for: [\.userProperties]))
        ),
        .unsuback(
            .init(
                packetIdentifier: 5,
                reasonCodes: [.success, .noSubscriptionExisted],
                properties: properties(for: [\.reasonString])
            )
        ),
        .disconnect(
            .init(
                reasonCode: .useAnotherServer,
                properties: properties(for: [
                    \.sessionExpiryInterval, \.serverReference, \.reasonString, \.userProperties,
                ])
            )
        ),
        .auth(
            .init(
                reasonCode: .continueAuthentication,
                properties: properties(for: [
                    \.authenticationMethod, \.authenticationData, \.reasonString, \.userProperties,
                ])
            )
        ),
    ]

    @Test(arguments: packets)
    func encodesToBytesThatDecodeToTheSamePacket(packet: Packet) throws {
        let bytes = try packet.encode()
        #expect(try Packet.decode(bytes) == packet)
        #expect(try Packet.decode(bytes).encode() == bytes)
    }

    @Test(arguments: packets)
    func encodesIntoAGatheringBufferAfterWhatItHolds(packet: Packet) throws {
        var output: [UInt8] = [0xAA, 0xBB]
        try packet.encode(into: &output)
        #expect(output == [0xAA, 0xBB] + (try packet.encode()))
    }

    @Test func decodesStringsBeyondASCIIAsWrittenAndRefusesU0000AmongThem() throws {
        var properties = Properties()
        properties.userProperties = [UserProperty("ключ", "värde"), UserProperty("plain", "é\u{1F600}")]
        let packet = Packet.publish(.init(topic: "unicode/é", payload: [1], properties: properties))
        #expect(try Packet.decode(try packet.encode()) == packet)
        // "é" then U+0000, as a topic: well-formed UTF-8, still refused.
        #expect(throws: PacketError.self) { try Packet.decode([0x30, 0x06, 0x00, 0x03, 0xC3, 0xA9, 0x00, 0x00]) }
    }

    @Test func leavesAGatheringBufferAsItWasWhenAPacketIsRefused() throws {
        let ack = Packet.puback(.init(packetIdentifier: 7))
        var output: [UInt8] = []
        try ack.encode(into: &output)
        let before = output
        let wildcard = Packet.publish(.init(topic: "a/+", payload: [1, 2, 3]))
        #expect(throws: PacketError.self) { try wildcard.encode(into: &output) }
        let nul = Packet.publish(.init(topic: "a\u{0}b", payload: [1, 2, 3]))
        #expect(throws: PacketError.self) { try nul.encode(into: &output) }
        #expect(output == before)
    }

    @Test func refusesEveryPropertyInAPacketThatDoesNotAllowIt() {
        // PINGREQ has no properties at all; UNSUBSCRIBE allows only User Property.
        var unsubscribe = Packet.Unsubscribe(packetIdentifier: 1, topicFilters: ["a"])
        unsubscribe.properties = Self.everyProperty
        unsubscribe.properties.userProperties = []
        #expect(throws: PacketError.self) { try Packet.unsubscribe(unsubscribe).encode() }
    }
}
