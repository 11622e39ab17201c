extension Packet {
    /// Decodes one packet whose fixed header has been read: `header` is its first byte and `bytes[range]` its
    /// Remaining Length bytes.
    ///
    /// - Throws: `PacketError` for the first violation met, with the reason code to disconnect with.
    static func decode(header: UInt8, _ bytes: [UInt8], _ range: Range<Int>) throws(PacketError) -> Packet {
        guard let type = PacketType(rawValue: header >> 4) else {
            throw .malformed("packet type 0 is reserved")
        }
        let flags = header & 0x0f
        if type != .publish && flags != type.fixedFlags {
            throw .malformed("\(type) has fixed header flags 0x\(String(flags, radix: 16)), not \(type.fixedFlags)")
        }
        var reader = ByteReader(bytes, range, packet: type)
        let packet: Packet
        switch type {
        case .connect: packet = .connect(try decodeConnect(&reader))
        case .connack:
            let acknowledgeFlags = try reader.u8("Connect Acknowledge Flags")
            guard acknowledgeFlags & 0xfe == 0 else {
                throw .malformed(
                    "CONNACK has reserved Connect Acknowledge Flags set (0x\(String(acknowledgeFlags, radix: 16)))"
                )
            }
            let code = ReasonCode(rawValue: try reader.u8("Reason Code"))
            let properties = try Properties.decode(from: &reader, in: .connack)
            packet = .connack(ConnAck(sessionPresent: acknowledgeFlags == 1, reasonCode: code, properties: properties))
        case .publish:
            guard let qos = QoS(rawValue: flags >> 1 & 0x03) else { throw .malformed("PUBLISH has QoS 3") }
            let topic = try reader.string("Topic Name")
            let identifier = qos == .atMostOnce ? 0 : try reader.u16("Packet Identifier")
            let properties = try Properties.decode(from: &reader, in: .publish)
            packet = .publish(
                Publish(
                    topic: topic,
                    payload: reader.rest(),
                    qos: qos,
                    retain: flags & 0x01 != 0,
                    dup: flags & 0x08 != 0,
                    packetIdentifier: identifier,
                    properties: properties
                )
            )
        case .puback, .pubrec, .pubrel, .pubcomp:
            var ack = Acknowledgement(packetIdentifier: try reader.u16("Packet Identifier"))
            if reader.remaining > 0 { ack.reasonCode = ReasonCode(rawValue: try reader.u8("Reason Code")) }
            if reader.remaining > 0 { ack.properties = try Properties.decode(from: &reader, in: .acknowledgement) }
            packet =
                switch type {
                case .puback: .puback(ack)
                case .pubrec: .pubrec(ack)
                case .pubrel: .pubrel(ack)
                default: .pubcomp(ack)
                }
        case .subscribe:
            let identifier = try reader.u16("Packet Identifier")
            let properties = try Properties.decode(from: &reader, in: .subscribe)
            var subscriptions: [Subscription] = []
            while reader.remaining > 0 {
                let filter = try reader.string("Topic Filter")
                let options = try reader.u8("Subscription Options")
                guard options & 0xc0 == 0 else {
                    throw .malformed(
                        "SUBSCRIBE Subscription Options has reserved bits set (0x\(String(options, radix: 16)))"
                    )
                }
                guard let qos = QoS(rawValue: options & 0x03) else {
                    throw .malformed("SUBSCRIBE Subscription Options has QoS 3")
                }
                guard let handling = RetainHandling(rawValue: options >> 4 & 0x03) else {
                    throw .protocolError("SUBSCRIBE Subscription Options has Retain Handling 3")
                }
                subscriptions.append(
                    Subscription(
                        topicFilter: filter,
                        qos: qos,
                        noLocal: options & 0x04 != 0,
                        retainAsPublished: options & 0x08 != 0,
                        retainHandling: handling
                    )
                )
            }
            packet = .subscribe(
                Subscribe(packetIdentifier: identifier, subscriptions: subscriptions, properties: properties)
            )
        case .suback, .unsuback:
            let identifier = try reader.u16("Packet Identifier")
            let properties = try Properties.decode(from: &reader, in: type == .suback ? .suback : .unsuback)
            let codes = reader.rest().map { ReasonCode(rawValue: $0) }
            let ack = SubAck(packetIdentifier: identifier, reasonCodes: codes, properties: properties)
            packet = type == .suback ? .suback(ack) : .unsuback(ack)
        case .unsubscribe:
            let identifier = try reader.u16("Packet Identifier")
            let properties = try Properties.decode(from: &reader, in: .unsubscribe)
            var filters: [String] = []
            while reader.remaining > 0 { filters.append(try reader.string("Topic Filter")) }
            packet = .unsubscribe(
                Unsubscribe(packetIdentifier: identifier, topicFilters: filters, properties: properties)
            )
        case .pingreq: packet = .pingreq
        case .pingresp: packet = .pingresp
        case .disconnect, .auth:
            var disconnect = Disconnect()
            if reader.remaining > 0 { disconnect.reasonCode = ReasonCode(rawValue: try reader.u8("Reason Code")) }
            if reader.remaining > 0 {
                disconnect.properties = try Properties.decode(from: &reader, in: type == .auth ? .auth : .disconnect)
            }
            packet = type == .auth ? .auth(disconnect) : .disconnect(disconnect)
        }
        try reader.finish()
        try packet.validate()
        return packet
    }

    private static func decodeConnect(_ reader: inout ByteReader) throws(PacketError) -> Connect {
        let name = try reader.string("Protocol Name")
        let version = try reader.u8("Protocol Version")
        guard name == "MQTT", version == 5 else {
            throw PacketError(
                .unsupportedProtocolVersion,
                "CONNECT is for protocol \"\(name)\" version \(version), not MQTT 5"
            )
        }
        let flags = try reader.u8("Connect Flags")
        guard flags & 0x01 == 0 else { throw .malformed("CONNECT has the reserved Connect Flag set") }
        let willQoSBits = flags >> 3 & 0x03
        guard let willQoS = QoS(rawValue: willQoSBits) else { throw .malformed("CONNECT has Will QoS 3") }
        let hasWill = flags & 0x04 != 0
        let willRetain = flags & 0x20 != 0
        guard hasWill || (willQoS == .atMostOnce && !willRetain) else {
            throw .malformed("CONNECT has Will QoS or Will Retain without the Will Flag")
        }
        var connect = Connect(
            clientIdentifier: "",
            cleanStart: flags & 0x02 != 0,
            keepAlive: try reader.u16("Keep Alive")
        )
        connect.properties = try Properties.decode(from: &reader, in: .connect)
        connect.clientIdentifier = try reader.string("Client Identifier")
        if hasWill {
            let properties = try Properties.decode(from: &reader, in: .will)
            let topic = try reader.string("Will Topic")
            connect.will = Will(
                topic: topic,
                payload: try reader.binary("Will Payload"),
                qos: willQoS,
                retain: willRetain,
                properties: properties
            )
        }
        if flags & 0x80 != 0 { connect.username = try reader.string("User Name") }
        if flags & 0x40 != 0 { connect.password = try reader.binary("Password") }
        return connect
    }
}
