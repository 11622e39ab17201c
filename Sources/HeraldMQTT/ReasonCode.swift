/// An MQTT 5.0 reason code (specification §2.4): the byte a CONNACK, PUBACK, SUBACK, UNSUBACK, DISCONNECT or AUTH
/// carries to say how an operation went. Values below 0x80 are successes, 0x80 and above failures.
///
/// Several codes share a value (0x00 is Success, Normal disconnection and Granted QoS 0), so this is a struct over
/// the byte rather than an enum, and any byte round-trips.
public struct ReasonCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8

    public init(rawValue: UInt8) {
        self.rawValue = rawValue
    }

    /// Whether this is a failure: the specification puts every failure at 0x80 or above.
    public var isFailure: Bool { rawValue >= 0x80 }

    public static let success = ReasonCode(rawValue: 0x00)
    public static let normalDisconnection = ReasonCode(rawValue: 0x00)
    public static let grantedQoS0 = ReasonCode(rawValue: 0x00)
    public static let grantedQoS1 = ReasonCode(rawValue: 0x01)
    public static let grantedQoS2 = ReasonCode(rawValue: 0x02)
    public static let disconnectWithWillMessage = ReasonCode(rawValue: 0x04)
    public static let noMatchingSubscribers = ReasonCode(rawValue: 0x10)
    public static let noSubscriptionExisted = ReasonCode(rawValue: 0x11)
    public static let continueAuthentication = ReasonCode(rawValue: 0x18)
    public static let reAuthenticate = ReasonCode(rawValue: 0x19)
    public static let unspecifiedError = ReasonCode(rawValue: 0x80)
    public static let malformedPacket = ReasonCode(rawValue: 0x81)
    public static let protocolError = ReasonCode(rawValue: 0x82)
    public static let implementationSpecificError = ReasonCode(rawValue: 0x83)
    public static let unsupportedProtocolVersion = ReasonCode(rawValue: 0x84)
    public static let clientIdentifierNotValid = ReasonCode(rawValue: 0x85)
    public static let badUserNameOrPassword = ReasonCode(rawValue: 0x86)
    public static let notAuthorized = ReasonCode(rawValue: 0x87)
    public static let serverUnavailable = ReasonCode(rawValue: 0x88)
    public static let serverBusy = ReasonCode(rawValue: 0x89)
    public static let banned = ReasonCode(rawValue: 0x8A)
    public static let serverShuttingDown = ReasonCode(rawValue: 0x8B)
    public static let badAuthenticationMethod = ReasonCode(rawValue: 0x8C)
    public static let keepAliveTimeout = ReasonCode(rawValue: 0x8D)
    public static let sessionTakenOver = ReasonCode(rawValue: 0x8E)
    public static let topicFilterInvalid = ReasonCode(rawValue: 0x8F)
    public static let topicNameInvalid = ReasonCode(rawValue: 0x90)
    public static let packetIdentifierInUse = ReasonCode(rawValue: 0x91)
    public static let packetIdentifierNotFound = ReasonCode(rawValue: 0x92)
    public static let receiveMaximumExceeded = ReasonCode(rawValue: 0x93)
    public static let topicAliasInvalid = ReasonCode(rawValue: 0x94)
    public static let packetTooLarge = ReasonCode(rawValue: 0x95)
    public static let messageRateTooHigh = ReasonCode(rawValue: 0x96)
    public static let quotaExceeded = ReasonCode(rawValue: 0x97)
    public static let administrativeAction = ReasonCode(rawValue: 0x98)
    public static let payloadFormatInvalid = ReasonCode(rawValue: 0x99)
    public static let retainNotSupported = ReasonCode(rawValue: 0x9A)
    public static let qosNotSupported = ReasonCode(rawValue: 0x9B)
    public static let useAnotherServer = ReasonCode(rawValue: 0x9C)
    public static let serverMoved = ReasonCode(rawValue: 0x9D)
    public static let sharedSubscriptionsNotSupported = ReasonCode(rawValue: 0x9E)
    public static let connectionRateExceeded = ReasonCode(rawValue: 0x9F)
    public static let maximumConnectTime = ReasonCode(rawValue: 0xA0)
    public static let subscriptionIdentifiersNotSupported = ReasonCode(rawValue: 0xA1)
    public static let wildcardSubscriptionsNotSupported = ReasonCode(rawValue: 0xA2)

    /// The code in hex with the specification's name for the failures a decoder reports, e.g.
    /// `0x81 Malformed Packet`.
    public var description: String {
        let hex = String(rawValue, radix: 16, uppercase: true)
        let number = "0x" + (hex.count == 1 ? "0" + hex : hex)
        let name: String? =
            switch self {
            case .success: "Success"
            case .unspecifiedError: "Unspecified error"
            case .malformedPacket: "Malformed Packet"
            case .protocolError: "Protocol Error"
            case .unsupportedProtocolVersion: "Unsupported Protocol Version"
            case .notAuthorized: "Not authorized"
            case .serverUnavailable: "Server unavailable"
            case .keepAliveTimeout: "Keep Alive timeout"
            case .topicFilterInvalid: "Topic Filter invalid"
            case .topicNameInvalid: "Topic Name invalid"
            case .receiveMaximumExceeded: "Receive Maximum exceeded"
            case .packetTooLarge: "Packet too large"
            case .qosNotSupported: "QoS not supported"
            default: nil
            }
        return name.map { "\(number) \($0)" } ?? number
    }
}
