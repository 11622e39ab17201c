extension Packet {
    /// PUBLISH (§3.3): an application message.
    public struct Publish: Hashable, Sendable {
        /// The Topic Name: no wildcards; empty only with a Topic Alias.
        public var topic: String
        public var payload: [UInt8]
        public var qos: QoS
        /// RETAIN: the server keeps the message as the topic's retained message (an empty payload clears it).
        public var retain: Bool
        /// DUP: a resend of a message that may have been received already; only with QoS 1 or 2.
        public var dup: Bool
        /// The Packet Identifier: nonzero with QoS 1 or 2, and 0 (absent on the wire) with QoS 0.
        public var packetIdentifier: UInt16
        /// Content Type, User Property, Payload Format Indicator, Message Expiry Interval, Topic Alias, ...
        public var properties: Properties

        /// Creates a PUBLISH.
        public init(
            topic: String,
            payload: [UInt8],
            qos: QoS = .atMostOnce,
            retain: Bool = false,
            dup: Bool = false,
            packetIdentifier: UInt16 = 0,
            properties: Properties = Properties()
        ) {
            self.topic = topic
            self.payload = payload
            self.qos = qos
            self.retain = retain
            self.dup = dup
            self.packetIdentifier = packetIdentifier
            self.properties = properties
        }
    }

    /// PUBACK, PUBREC, PUBREL or PUBCOMP (§3.4 to §3.7): the answers in a QoS 1 or 2 exchange, which share a
    /// layout.
    public struct Acknowledgement: Hashable, Sendable {
        /// The Packet Identifier of the PUBLISH (or PUBREC, PUBREL) this answers; nonzero.
        public var packetIdentifier: UInt16
        public var reasonCode: ReasonCode
        /// Reason String and User Property.
        public var properties: Properties

        /// Creates an acknowledgement.
        public init(packetIdentifier: UInt16, reasonCode: ReasonCode = .success, properties: Properties = Properties())
        {
            self.packetIdentifier = packetIdentifier
            self.reasonCode = reasonCode
            self.properties = properties
        }
    }
}
