/// The properties of a packet or of a will (MQTT 5.0 §2.2.2): each single-valued one is nil when absent; User
/// Property and Subscription Identifier may repeat and are arrays, in the order they appeared.
///
/// Every property of the specification's table is here, so whatever a broker sends round-trips. Which of them a
/// packet may carry is checked by the encoder and the decoder alike (`Properties.Context`).
public struct Properties: Hashable, Sendable {
    /// 0x01 Payload Format Indicator: 0 unspecified bytes, 1 UTF-8 text.
    public var payloadFormatIndicator: UInt8?
    /// 0x02 Message Expiry Interval, in seconds.
    public var messageExpiryInterval: UInt32?
    /// 0x03 Content Type, e.g. `application/json`.
    public var contentType: String?
    /// 0x08 Response Topic.
    public var responseTopic: String?
    /// 0x09 Correlation Data.
    public var correlationData: [UInt8]?
    /// 0x0B Subscription Identifier, 1 to 268,435,455: one in a SUBSCRIBE, any number in a PUBLISH to a client.
    public var subscriptionIdentifiers: [Int] = []
    /// 0x11 Session Expiry Interval, in seconds.
    public var sessionExpiryInterval: UInt32?
    /// 0x12 Assigned Client Identifier.
    public var assignedClientIdentifier: String?
    /// 0x13 Server Keep Alive, in seconds.
    public var serverKeepAlive: UInt16?
    /// 0x15 Authentication Method.
    public var authenticationMethod: String?
    /// 0x16 Authentication Data.
    public var authenticationData: [UInt8]?
    /// 0x17 Request Problem Information, 0 or 1.
    public var requestProblemInformation: UInt8?
    /// 0x18 Will Delay Interval, in seconds.
    public var willDelayInterval: UInt32?
    /// 0x19 Request Response Information, 0 or 1.
    public var requestResponseInformation: UInt8?
    /// 0x1A Response Information.
    public var responseInformation: String?
    /// 0x1C Server Reference.
    public var serverReference: String?
    /// 0x1F Reason String.
    public var reasonString: String?
    /// 0x21 Receive Maximum, 1 to 65,535.
    public var receiveMaximum: UInt16?
    /// 0x22 Topic Alias Maximum.
    public var topicAliasMaximum: UInt16?
    /// 0x23 Topic Alias, 1 to 65,535.
    public var topicAlias: UInt16?
    /// 0x24 Maximum QoS, 0 or 1.
    public var maximumQoS: UInt8?
    /// 0x25 Retain Available, 0 or 1.
    public var retainAvailable: UInt8?
    /// 0x26 User Property: name and value pairs, repeatable, in order.
    public var userProperties: [UserProperty] = []
    /// 0x27 Maximum Packet Size, in bytes, at least 1.
    public var maximumPacketSize: UInt32?
    /// 0x28 Wildcard Subscription Available, 0 or 1.
    public var wildcardSubscriptionAvailable: UInt8?
    /// 0x29 Subscription Identifier Available, 0 or 1.
    public var subscriptionIdentifierAvailable: UInt8?
    /// 0x2A Shared Subscription Available, 0 or 1.
    public var sharedSubscriptionAvailable: UInt8?

    /// No properties.
    public init() {}

    /// Whether no property is set: an empty property section (its length byte 0).
    public var isEmpty: Bool { self == Properties() }

    /// The value of the first user property named `name`.
    public func userProperty(_ name: String) -> String? {
        userProperties.first { $0.name == name }?.value
    }
}

/// A User Property (0x26): a UTF-8 String Pair.
public struct UserProperty: Hashable, Sendable {
    public var name: String
    public var value: String

    /// Creates a pair.
    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
}

extension Properties {
    /// Where a property section stands, which decides the properties it may hold (§2.2.2.2's table).
    public enum Context: Sendable, CustomStringConvertible {
        case connect
        case will
        case connack
        case publish
        /// PUBACK, PUBREC, PUBREL and PUBCOMP.
        case acknowledgement
        case subscribe
        case suback
        case unsubscribe
        case unsuback
        case disconnect
        case auth

        public var description: String {
            switch self {
            case .connect: "CONNECT"
            case .will: "will properties"
            case .connack: "CONNACK"
            case .publish: "PUBLISH"
            case .acknowledgement: "acknowledgement"
            case .subscribe: "SUBSCRIBE"
            case .suback: "SUBACK"
            case .unsubscribe: "UNSUBSCRIBE"
            case .unsuback: "UNSUBACK"
            case .disconnect: "DISCONNECT"
            case .auth: "AUTH"
            }
        }

        /// The identifiers allowed here, one bit each (every identifier is below 64); computed once per context,
        /// not once per packet.
        var allowed: UInt64 {
            switch self {
            case .connect: Self.masks.connect
            case .will: Self.masks.will
            case .connack: Self.masks.connack
            case .publish: Self.masks.publish
            case .acknowledgement: Self.masks.acknowledgement
            case .subscribe: Self.masks.subscribe
            case .suback: Self.masks.suback
            case .unsubscribe: Self.masks.unsubscribe
            case .unsuback: Self.masks.unsuback
            case .disconnect: Self.masks.disconnect
            case .auth: Self.masks.auth
            }
        }

        private static let masks = (
            connect: Context.connect.allowedIdentifiers, will: Context.will.allowedIdentifiers,
            connack: Context.connack.allowedIdentifiers, publish: Context.publish.allowedIdentifiers,
            acknowledgement: Context.acknowledgement.allowedIdentifiers,
            subscribe: Context.subscribe.allowedIdentifiers, suback: Context.suback.allowedIdentifiers,
            unsubscribe: Context.unsubscribe.allowedIdentifiers, unsuback: Context.unsuback.allowedIdentifiers,
            disconnect: Context.disconnect.allowedIdentifiers, auth: Context.auth.allowedIdentifiers
        )

        private var allowedIdentifiers: UInt64 {
            let ids: [Identifier] =
                switch self {
                case .connect:
                    [
                        .sessionExpiryInterval, .authenticationMethod, .authenticationData,
                        .requestProblemInformation, .requestResponseInformation, .receiveMaximum,
                        .topicAliasMaximum, .userProperty, .maximumPacketSize,
                    ]
                case .will:
                    [
                        .payloadFormatIndicator, .messageExpiryInterval, .contentType, .responseTopic,
                        .correlationData, .willDelayInterval, .userProperty,
                    ]
                case .connack:
                    [
                        .sessionExpiryInterval, .assignedClientIdentifier, .serverKeepAlive, .authenticationMethod,
                        .authenticationData, .responseInformation, .serverReference, .reasonString, .receiveMaximum,
                        .topicAliasMaximum, .maximumQoS, .retainAvailable, .userProperty, .maximumPacketSize,
                        .wildcardSubscriptionAvailable, .subscriptionIdentifierAvailable,
                        .sharedSubscriptionAvailable,
                    ]
                case .publish:
                    [
                        .payloadFormatIndicator, .messageExpiryInterval, .contentType, .responseTopic,
                        .correlationData, .subscriptionIdentifier, .topicAlias, .userProperty,
                    ]
                case .acknowledgement, .suback, .unsuback: [.reasonString, .userProperty]
                case .subscribe: [.subscriptionIdentifier, .userProperty]
                case .unsubscribe: [.userProperty]
                case .disconnect: [.sessionExpiryInterval, .serverReference, .reasonString, .userProperty]
                case .auth: [.authenticationMethod, .authenticationData, .reasonString, .userProperty]
                }
            return ids.reduce(0) { $0 | 1 << $1.rawValue }
        }
    }

    /// The property identifiers of §2.2.2.2.
    public enum Identifier: UInt8, Sendable, CaseIterable, CustomStringConvertible {
        case payloadFormatIndicator = 0x01
        case messageExpiryInterval = 0x02
        case contentType = 0x03
        case responseTopic = 0x08
        case correlationData = 0x09
        case subscriptionIdentifier = 0x0B
        case sessionExpiryInterval = 0x11
        case assignedClientIdentifier = 0x12
        case serverKeepAlive = 0x13
        case authenticationMethod = 0x15
        case authenticationData = 0x16
        case requestProblemInformation = 0x17
        case willDelayInterval = 0x18
        case requestResponseInformation = 0x19
        case responseInformation = 0x1A
        case serverReference = 0x1C
        case reasonString = 0x1F
        case receiveMaximum = 0x21
        case topicAliasMaximum = 0x22
        case topicAlias = 0x23
        case maximumQoS = 0x24
        case retainAvailable = 0x25
        case userProperty = 0x26
        case maximumPacketSize = 0x27
        case wildcardSubscriptionAvailable = 0x28
        case subscriptionIdentifierAvailable = 0x29
        case sharedSubscriptionAvailable = 0x2A

        public var description: String {
            let hex = String(rawValue, radix: 16, uppercase: true)
            return "property 0x" + (hex.count == 1 ? "0" + hex : hex)
        }
    }
}
