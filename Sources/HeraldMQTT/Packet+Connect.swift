extension Packet {
    /// CONNECT (§3.1): the first packet a client sends.
    public struct Connect: Hashable, Sendable {
        /// The Client Identifier; empty asks the server to assign one.
        public var clientIdentifier: String
        /// Clean Start: begin a new session rather than resume one.
        public var cleanStart: Bool
        /// Keep Alive in seconds; 0 turns the mechanism off.
        public var keepAlive: UInt16
        /// Session Expiry Interval, Receive Maximum, Maximum Packet Size, Topic Alias Maximum, User Property, ...
        public var properties: Properties
        /// The will the server publishes if the connection ends without a DISCONNECT.
        public var will: Will?
        public var username: String?
        public var password: [UInt8]?

        /// Creates a CONNECT.
        public init(
            clientIdentifier: String,
            cleanStart: Bool = true,
            keepAlive: UInt16 = 60,
            properties: Properties = Properties(),
            will: Will? = nil,
            username: String? = nil,
            password: [UInt8]? = nil
        ) {
            self.clientIdentifier = clientIdentifier
            self.cleanStart = cleanStart
            self.keepAlive = keepAlive
            self.properties = properties
            self.will = will
            self.username = username
            self.password = password
        }
    }

    /// A CONNECT's will (§3.1.2.5, §3.1.3.2): a message the server publishes for the client.
    public struct Will: Hashable, Sendable {
        public var topic: String
        public var payload: [UInt8]
        public var qos: QoS
        public var retain: Bool
        /// Will Delay Interval, Payload Format Indicator, Message Expiry Interval, Content Type, User Property, ...
        public var properties: Properties

        /// Creates a will.
        public init(
            topic: String,
            payload: [UInt8],
            qos: QoS = .atMostOnce,
            retain: Bool = false,
            properties: Properties = Properties()
        ) {
            self.topic = topic
            self.payload = payload
            self.qos = qos
            self.retain = retain
            self.properties = properties
        }
    }

    /// CONNACK (§3.2): the server's answer to CONNECT.
    public struct ConnAck: Hashable, Sendable {
        /// Session Present: the server resumed a session it held. Always false with a failure.
        public var sessionPresent: Bool
        /// Success, or why the connection is refused.
        public var reasonCode: ReasonCode
        /// Assigned Client Identifier, Server Keep Alive, Receive Maximum, Maximum QoS, Retain Available, ...
        public var properties: Properties

        /// Creates a CONNACK.
        public init(
            sessionPresent: Bool = false,
            reasonCode: ReasonCode = .success,
            properties: Properties = Properties()
        ) {
            self.sessionPresent = sessionPresent
            self.reasonCode = reasonCode
            self.properties = properties
        }
    }
}
