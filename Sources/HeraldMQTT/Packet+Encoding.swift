extension Packet {
    /// Checks everything the decoder checks of a packet's fields, so that what encodes decodes.
    ///
    /// - Throws: `PacketError` naming the field, with the code a receiver would disconnect with.
    public func validate() throws(PacketError) {
        switch self {
        case .connect(let connect):
            try Packet.checkString(connect.clientIdentifier, "CONNECT Client Identifier")
            try connect.properties.validate(in: .connect)
            if let will = connect.will {
                try will.properties.validate(in: .will)
                try Packet.checkString(will.topic, "CONNECT Will Topic")
                try Topic.validateName(will.topic)
                try Packet.checkBinary(will.payload, "CONNECT Will Payload")
            }
            if let username = connect.username { try Packet.checkString(username, "CONNECT User Name") }
            if let password = connect.password { try Packet.checkBinary(password, "CONNECT Password") }
        case .connack(let connack):
            if connack.sessionPresent && connack.reasonCode.isFailure {
                throw .protocolError("CONNACK has Session Present with failure \(connack.reasonCode)")
            }
            try connack.properties.validate(in: .connack)
        case .publish(let publish):
            try Packet.checkString(publish.topic, "PUBLISH Topic Name")
            try Topic.validateName(publish.topic, allowEmpty: publish.properties.topicAlias != nil)
            if publish.qos == .atMostOnce {
                if publish.dup { throw .malformed("PUBLISH at QoS 0 has DUP set") }
                if publish.packetIdentifier != 0 {
                    throw .malformed("PUBLISH at QoS 0 has Packet Identifier \(publish.packetIdentifier)")
                }
            } else if publish.packetIdentifier == 0 {
                throw .protocolError("PUBLISH at QoS \(publish.qos.rawValue) has Packet Identifier 0")
            }
            try publish.properties.validate(in: .publish)
        case .puback(let ack), .pubrec(let ack), .pubrel(let ack), .pubcomp(let ack):
            try Packet.checkIdentifier(ack.packetIdentifier, type)
            try ack.properties.validate(in: .acknowledgement)
        case .subscribe(let subscribe):
            try Packet.checkIdentifier(subscribe.packetIdentifier, type)
            try subscribe.properties.validate(in: .subscribe)
            guard !subscribe.subscriptions.isEmpty else { throw .protocolError("SUBSCRIBE has no Topic Filter") }
            for subscription in subscribe.subscriptions {
                try Packet.checkString(subscription.topicFilter, "SUBSCRIBE Topic Filter")
                try Topic.validateFilter(subscription.topicFilter)
            }
        case .suback(let ack), .unsuback(let ack):
            try Packet.checkIdentifier(ack.packetIdentifier, type)
            try ack.properties.validate(in: type == .suback ? .suback : .unsuback)
            guard !ack.reasonCodes.isEmpty else { throw .protocolError("\(type) has no Reason Code") }
        case .unsubscribe(let unsubscribe):
            try Packet.checkIdentifier(unsubscribe.packetIdentifier, type)
            try unsubscribe.properties.validate(in: .unsubscribe)
            guard !unsubscribe.topicFilters.isEmpty else { throw .protocolError("UNSUBSCRIBE has no Topic Filter") }
            for filter in unsubscribe.topicFilters {
                try Packet.checkString(filter, "UNSUBSCRIBE Topic Filter")
                try Topic.validateFilter(filter)
            }
        case .pingreq, .pingresp:
            break
        case .disconnect(let disconnect):
            try disconnect.properties.validate(in: .disconnect)
        case .auth(let auth):
            try auth.properties.validate(in: .auth)
        }
    }

    /// The packet's bytes: fixed header, variable header and payload.
    ///
    /// - Throws: `PacketError` when a field breaks a rule `validate()` checks, or the packet is longer than a
    ///   Remaining Length can say (268,435,455 bytes).
    public func encode() throws(PacketError) -> [UInt8] {
        var bytes: [UInt8] = []
        try encode(into: &bytes)
        return bytes
    }

    /// Validates the packet and appends its encoding to `output`; on a throw, `output` is as it was.
    ///
    /// A sender that gathers packets for one write appends each in place: encoding into an array of its own and
    /// appending that cost an allocation and a copy per packet (perf, the exporting bridge).
    ///
    /// - Parameter validating: false when the caller has called ``validate()`` on this packet already, or on one that
    ///   differs only in fields it has since set to valid values (a PUBLISH's Packet Identifier and DUP, by a sender
    ///   that numbers its own): a message validated once where it is made is not checked again each time it is sent
    ///   (perf: about 4 % of the exporting bridge). Encoding a packet that does not validate gives bytes a receiver
    ///   rejects.
    /// - Throws: `PacketError` when validating and a field breaks a rule `validate()` checks, or the packet is longer
    ///   than a Remaining Length can say.
    public func encode(into output: inout [UInt8], validating: Bool = true) throws(PacketError) {
        if validating { try validate() }
        var body = ByteWriter()
        if case .publish(let publish) = self {
            // The whole body at once, not grown from empty by doubling: topic, identifier, properties, payload.
            body.bytes.reserveCapacity(publish.topic.utf8.count + publish.payload.count + 128)
        }
        var flags = type.fixedFlags
        switch self {
        case .connect(let connect):
            body.string("MQTT")
            body.u8(5)
            var connectFlags: UInt8 = connect.cleanStart ? 0x02 : 0
            if let will = connect.will {
                connectFlags |= 0x04 | will.qos.rawValue << 3 | (will.retain ? 0x20 : 0)
            }
            if connect.password != nil { connectFlags |= 0x40 }
            if connect.username != nil { connectFlags |= 0x80 }
            body.u8(connectFlags)
            body.u16(connect.keepAlive)
            connect.properties.encode(into: &body)
            body.string(connect.clientIdentifier)
            if let will = connect.will {
                will.properties.encode(into: &body)
                body.string(will.topic)
                body.binary(will.payload)
            }
            if let username = connect.username { body.string(username) }
            if let password = connect.password { body.binary(password) }
        case .connack(let connack):
            body.u8(connack.sessionPresent ? 1 : 0)
            body.u8(connack.reasonCode.rawValue)
            connack.properties.encode(into: &body)
        case .publish(let publish):
            flags = (publish.dup ? 0x08 : 0) | publish.qos.rawValue << 1 | (publish.retain ? 0x01 : 0)
            body.string(publish.topic)
            if publish.qos != .atMostOnce { body.u16(publish.packetIdentifier) }
            publish.properties.encode(into: &body)
            body.append(publish.payload)
        case .puback(let ack), .pubrec(let ack), .pubrel(let ack), .pubcomp(let ack):
            body.u16(ack.packetIdentifier)
            // §3.4.2.1: the Reason Code and the Property Length may be left out, and are, when they say nothing.
            if ack.reasonCode != .success || !ack.properties.isEmpty {
                body.u8(ack.reasonCode.rawValue)
                if !ack.properties.isEmpty { ack.properties.encode(into: &body) }
            }
        case .subscribe(let subscribe):
            body.u16(subscribe.packetIdentifier)
            subscribe.properties.encode(into: &body)
            for subscription in subscribe.subscriptions {
                body.string(subscription.topicFilter)
                body.u8(
                    subscription.qos.rawValue | (subscription.noLocal ? 0x04 : 0)
                        | (subscription.retainAsPublished ? 0x08 : 0) | subscription.retainHandling.rawValue << 4
                )
            }
        case .suback(let ack), .unsuback(let ack):
            body.u16(ack.packetIdentifier)
            ack.properties.encode(into: &body)
            for code in ack.reasonCodes { body.u8(code.rawValue) }
        case .unsubscribe(let unsubscribe):
            body.u16(unsubscribe.packetIdentifier)
            unsubscribe.properties.encode(into: &body)
            for filter in unsubscribe.topicFilters { body.string(filter) }
        case .pingreq, .pingresp:
            break
        case .disconnect(let disconnect), .auth(let disconnect):
            // §3.14.2.1, §3.15.2.1: a Remaining Length of 0 means Success (Normal disconnection) and no properties.
            if disconnect.reasonCode != .success || !disconnect.properties.isEmpty {
                body.u8(disconnect.reasonCode.rawValue)
                if !disconnect.properties.isEmpty { disconnect.properties.encode(into: &body) }
            }
        }
        guard body.bytes.count <= VariableByteInteger.maximum else {
            throw PacketError(.packetTooLarge, "\(type) of \(body.bytes.count) bytes is over 268,435,455")
        }
        // Exactly the packet's size for a new array; a gathering one grows as arrays do, which a reserve per packet
        // would defeat.
        if output.isEmpty { output.reserveCapacity(body.bytes.count + 5) }
        output.append(type.rawValue << 4 | flags)
        VariableByteInteger.append(body.bytes.count, to: &output)
        output.append(contentsOf: body.bytes)
    }

    static func checkBinary(_ data: [UInt8], _ field: String) throws(PacketError) {
        guard data.count <= 65_535 else { throw .malformed("\(field) of \(data.count) bytes is over 65,535") }
    }

    static func checkIdentifier(_ identifier: UInt16, _ type: PacketType) throws(PacketError) {
        guard identifier != 0 else { throw .protocolError("\(type) has Packet Identifier 0") }
    }
}
