extension Properties {
    /// The identifiers of the properties that are set, one bit each.
    var present: UInt64 {
        var bits: UInt64 = 0
        func mark(_ id: Identifier, _ isSet: Bool) {
            if isSet { bits |= 1 << id.rawValue }
        }
        mark(.payloadFormatIndicator, payloadFormatIndicator != nil)
        mark(.messageExpiryInterval, messageExpiryInterval != nil)
        mark(.contentType, contentType != nil)
        mark(.responseTopic, responseTopic != nil)
        mark(.correlationData, correlationData != nil)
        mark(.subscriptionIdentifier, !subscriptionIdentifiers.isEmpty)
        mark(.sessionExpiryInterval, sessionExpiryInterval != nil)
        mark(.assignedClientIdentifier, assignedClientIdentifier != nil)
        mark(.serverKeepAlive, serverKeepAlive != nil)
        mark(.authenticationMethod, authenticationMethod != nil)
        mark(.authenticationData, authenticationData != nil)
        mark(.requestProblemInformation, requestProblemInformation != nil)
        mark(.willDelayInterval, willDelayInterval != nil)
        mark(.requestResponseInformation, requestResponseInformation != nil)
        mark(.responseInformation, responseInformation != nil)
        mark(.serverReference, serverReference != nil)
        mark(.reasonString, reasonString != nil)
        mark(.receiveMaximum, receiveMaximum != nil)
        mark(.topicAliasMaximum, topicAliasMaximum != nil)
        mark(.topicAlias, topicAlias != nil)
        mark(.maximumQoS, maximumQoS != nil)
        mark(.retainAvailable, retainAvailable != nil)
        mark(.userProperty, !userProperties.isEmpty)
        mark(.maximumPacketSize, maximumPacketSize != nil)
        mark(.wildcardSubscriptionAvailable, wildcardSubscriptionAvailable != nil)
        mark(.subscriptionIdentifierAvailable, subscriptionIdentifierAvailable != nil)
        mark(.sharedSubscriptionAvailable, sharedSubscriptionAvailable != nil)
        return bits
    }

    /// Checks what the specification requires of properties in `context`, the same rules for the encoder and the
    /// decoder, so that whatever one accepts the other does.
    ///
    /// - Throws: 0x81 Malformed Packet for a property the packet may not carry (§2.2.2.2) or a string or binary
    ///   value too long to encode; 0x82 Protocol Error for a value out of its range or a repeated Subscription
    ///   Identifier outside PUBLISH.
    func validate(in context: Context) throws(PacketError) {
        let disallowed = present & ~context.allowed
        if disallowed != 0, let id = Identifier.allCases.first(where: { disallowed & 1 << $0.rawValue != 0 }) {
            throw .malformed("\(context) may not carry \(id) (\(id.name))")
        }
        // Each checked in place: arrays of the values cost an allocation per packet.
        func flag(_ id: Identifier, _ value: UInt8?) throws(PacketError) {
            if let value, value > 1 { throw .protocolError("\(context) \(id.name) is \(value), not 0 or 1") }
        }
        try flag(.payloadFormatIndicator, payloadFormatIndicator)
        try flag(.requestProblemInformation, requestProblemInformation)
        try flag(.requestResponseInformation, requestResponseInformation)
        try flag(.maximumQoS, maximumQoS)
        try flag(.retainAvailable, retainAvailable)
        try flag(.wildcardSubscriptionAvailable, wildcardSubscriptionAvailable)
        try flag(.subscriptionIdentifierAvailable, subscriptionIdentifierAvailable)
        try flag(.sharedSubscriptionAvailable, sharedSubscriptionAvailable)
        if receiveMaximum == 0 { throw .protocolError("\(context) Receive Maximum is 0") }
        if maximumPacketSize == 0 { throw .protocolError("\(context) Maximum Packet Size is 0") }
        if topicAlias == 0 { throw .protocolError("\(context) Topic Alias is 0") }
        if context != .publish && subscriptionIdentifiers.count > 1 {
            throw .protocolError("\(context) carries more than one Subscription Identifier")
        }
        for identifier in subscriptionIdentifiers where identifier < 1 || identifier > VariableByteInteger.maximum {
            throw .protocolError("\(context) Subscription Identifier \(identifier) is not 1 to 268,435,455")
        }
        func string(_ text: String?) throws(PacketError) {
            if let text { try Packet.checkString(text, "\(context) property") }
        }
        try string(contentType)
        try string(responseTopic)
        try string(assignedClientIdentifier)
        try string(authenticationMethod)
        try string(responseInformation)
        try string(serverReference)
        try string(reasonString)
        for pair in userProperties {
            try Packet.checkString(pair.name, "\(context) User Property name")
            try Packet.checkString(pair.value, "\(context) User Property value")
        }
        func binary(_ data: [UInt8]?) throws(PacketError) {
            if let data, data.count > 65_535 {
                throw .malformed("\(context) binary property of \(data.count) bytes is over 65,535")
            }
        }
        try binary(correlationData)
        try binary(authenticationData)
    }

    /// Appends the property section: its length, then each property, in identifier order.
    func encode(into writer: inout ByteWriter) {
        var section = ByteWriter()
        // Room for the usual section (a few user properties) at once: grown from empty, it was reallocated several
        // times per packet.
        section.bytes.reserveCapacity(128)
        func byte(_ id: Identifier, _ value: UInt8?) {
            if let value {
                section.u8(id.rawValue)
                section.u8(value)
            }
        }
        func two(_ id: Identifier, _ value: UInt16?) {
            if let value {
                section.u8(id.rawValue)
                section.u16(value)
            }
        }
        func four(_ id: Identifier, _ value: UInt32?) {
            if let value {
                section.u8(id.rawValue)
                section.u32(value)
            }
        }
        func string(_ id: Identifier, _ value: String?) {
            if let value {
                section.u8(id.rawValue)
                section.string(value)
            }
        }
        func binary(_ id: Identifier, _ value: [UInt8]?) {
            if let value {
                section.u8(id.rawValue)
                section.binary(value)
            }
        }
        byte(.payloadFormatIndicator, payloadFormatIndicator)
        four(.messageExpiryInterval, messageExpiryInterval)
        string(.contentType, contentType)
        string(.responseTopic, responseTopic)
        binary(.correlationData, correlationData)
        for identifier in subscriptionIdentifiers {
            section.u8(Identifier.subscriptionIdentifier.rawValue)
            section.variableInteger(identifier)
        }
        four(.sessionExpiryInterval, sessionExpiryInterval)
        string(.assignedClientIdentifier, assignedClientIdentifier)
        two(.serverKeepAlive, serverKeepAlive)
        string(.authenticationMethod, authenticationMethod)
        binary(.authenticationData, authenticationData)
        byte(.requestProblemInformation, requestProblemInformation)
        four(.willDelayInterval, willDelayInterval)
        byte(.requestResponseInformation, requestResponseInformation)
        string(.responseInformation, responseInformation)
        string(.serverReference, serverReference)
        string(.reasonString, reasonString)
        two(.receiveMaximum, receiveMaximum)
        two(.topicAliasMaximum, topicAliasMaximum)
        two(.topicAlias, topicAlias)
        byte(.maximumQoS, maximumQoS)
        byte(.retainAvailable, retainAvailable)
        for pair in userProperties {
            section.u8(Identifier.userProperty.rawValue)
            section.string(pair.name)
            section.string(pair.value)
        }
        four(.maximumPacketSize, maximumPacketSize)
        byte(.wildcardSubscriptionAvailable, wildcardSubscriptionAvailable)
        byte(.subscriptionIdentifierAvailable, subscriptionIdentifierAvailable)
        byte(.sharedSubscriptionAvailable, sharedSubscriptionAvailable)
        writer.variableInteger(section.bytes.count)
        writer.append(section.bytes)
    }

    /// Reads a property section (its length and properties) for `context`, and validates it.
    ///
    /// - Throws: 0x81 Malformed Packet for an unknown identifier, a property that overruns the section, or one the
    ///   packet may not carry; 0x82 Protocol Error for a single-valued property given twice or a value out of range.
    static func decode(from reader: inout ByteReader, in context: Context) throws(PacketError) -> Properties {
        let length = try reader.variableInteger("\(context) property length")
        var section = try reader.section(length, "\(context) properties")
        var properties = Properties()
        var seen: UInt64 = 0
        while section.remaining > 0 {
            let raw = try section.u8("\(context) property identifier")
            guard let id = Identifier(rawValue: raw) else {
                let hex = String(raw, radix: 16, uppercase: true)
                throw .malformed("\(context) has unknown property identifier 0x\(hex.count == 1 ? "0" + hex : hex)")
            }
            let repeatable = id == .userProperty || (id == .subscriptionIdentifier && context == .publish)
            guard repeatable || seen & 1 << id.rawValue == 0 else {
                throw .protocolError("\(context) carries \(id) (\(id.name)) more than once")
            }
            seen |= 1 << id.rawValue
            let field = id.name
            switch id {
            case .payloadFormatIndicator: properties.payloadFormatIndicator = try section.u8(field)
            case .messageExpiryInterval: properties.messageExpiryInterval = try section.u32(field)
            case .contentType: properties.contentType = try section.string(field)
            case .responseTopic: properties.responseTopic = try section.string(field)
            case .correlationData: properties.correlationData = try section.binary(field)
            case .subscriptionIdentifier: properties.subscriptionIdentifiers.append(try section.variableInteger(field))
            case .sessionExpiryInterval: properties.sessionExpiryInterval = try section.u32(field)
            case .assignedClientIdentifier: properties.assignedClientIdentifier = try section.string(field)
            case .serverKeepAlive: properties.serverKeepAlive = try section.u16(field)
            case .authenticationMethod: properties.authenticationMethod = try section.string(field)
            case .authenticationData: properties.authenticationData = try section.binary(field)
            case .requestProblemInformation: properties.requestProblemInformation = try section.u8(field)
            case .willDelayInterval: properties.willDelayInterval = try section.u32(field)
            case .requestResponseInformation: properties.requestResponseInformation = try section.u8(field)
            case .responseInformation: properties.responseInformation = try section.string(field)
            case .serverReference: properties.serverReference = try section.string(field)
            case .reasonString: properties.reasonString = try section.string(field)
            case .receiveMaximum: properties.receiveMaximum = try section.u16(field)
            case .topicAliasMaximum: properties.topicAliasMaximum = try section.u16(field)
            case .topicAlias: properties.topicAlias = try section.u16(field)
            case .maximumQoS: properties.maximumQoS = try section.u8(field)
            case .retainAvailable: properties.retainAvailable = try section.u8(field)
            case .userProperty:
                let name = try section.string("User Property name")
                properties.userProperties.append(UserProperty(name, try section.string("User Property value")))
            case .maximumPacketSize: properties.maximumPacketSize = try section.u32(field)
            case .wildcardSubscriptionAvailable: properties.wildcardSubscriptionAvailable = try section.u8(field)
            case .subscriptionIdentifierAvailable: properties.subscriptionIdentifierAvailable = try section.u8(field)
            case .sharedSubscriptionAvailable: properties.sharedSubscriptionAvailable = try section.u8(field)
            }
        }
        try properties.validate(in: context)
        return properties
    }
}

extension Properties.Identifier {
    /// The specification's name for the property.
    public var name: String {
        switch self {
        case .payloadFormatIndicator: "Payload Format Indicator"
        case .messageExpiryInterval: "Message Expiry Interval"
        case .contentType: "Content Type"
        case .responseTopic: "Response Topic"
        case .correlationData: "Correlation Data"
        case .subscriptionIdentifier: "Subscription Identifier"
        case .sessionExpiryInterval: "Session Expiry Interval"
        case .assignedClientIdentifier: "Assigned Client Identifier"
        case .serverKeepAlive: "Server Keep Alive"
        case .authenticationMethod: "Authentication Method"
        case .authenticationData: "Authentication Data"
        case .requestProblemInformation: "Request Problem Information"
        case .willDelayInterval: "Will Delay Interval"
        case .requestResponseInformation: "Request Response Information"
        case .responseInformation: "Response Information"
        case .serverReference: "Server Reference"
        case .reasonString: "Reason String"
        case .receiveMaximum: "Receive Maximum"
        case .topicAliasMaximum: "Topic Alias Maximum"
        case .topicAlias: "Topic Alias"
        case .maximumQoS: "Maximum QoS"
        case .retainAvailable: "Retain Available"
        case .userProperty: "User Property"
        case .maximumPacketSize: "Maximum Packet Size"
        case .wildcardSubscriptionAvailable: "Wildcard Subscription Available"
        case .subscriptionIdentifierAvailable: "Subscription Identifier Available"
        case .sharedSubscriptionAvailable: "Shared Subscription Available"
        }
    }
}
