extension Packet {
    /// SUBSCRIBE (§3.8): one or more topic filters with their options.
    public struct Subscribe: Hashable, Sendable {
        /// Nonzero.
        public var packetIdentifier: UInt16
        /// Subscription Identifier (at most one) and User Property.
        public var properties: Properties
        /// At least one.
        public var subscriptions: [Subscription]

        /// Creates a SUBSCRIBE.
        public init(packetIdentifier: UInt16, subscriptions: [Subscription], properties: Properties = Properties()) {
            self.packetIdentifier = packetIdentifier
            self.properties = properties
            self.subscriptions = subscriptions
        }
    }

    /// One topic filter of a SUBSCRIBE and its Subscription Options (§3.8.3.1).
    public struct Subscription: Hashable, Sendable {
        public var topicFilter: String
        /// The highest QoS the server may deliver at.
        public var qos: QoS
        /// No Local: the server does not send this client's own messages back to it.
        public var noLocal: Bool
        /// Retain As Published: forwarded messages keep the RETAIN flag they were published with.
        public var retainAsPublished: Bool
        public var retainHandling: RetainHandling

        /// Creates a subscription.
        public init(
            topicFilter: String,
            qos: QoS = .atMostOnce,
            noLocal: Bool = false,
            retainAsPublished: Bool = false,
            retainHandling: RetainHandling = .sendOnSubscribe
        ) {
            self.topicFilter = topicFilter
            self.qos = qos
            self.noLocal = noLocal
            self.retainAsPublished = retainAsPublished
            self.retainHandling = retainHandling
        }
    }

    /// Retain Handling (§3.8.3.1): when the server sends the retained messages a new subscription matches. 3 is
    /// not one.
    public enum RetainHandling: UInt8, Hashable, Sendable {
        case sendOnSubscribe = 0
        case sendIfNewSubscription = 1
        case doNotSend = 2
    }

    /// SUBACK (§3.9) or UNSUBACK (§3.11): one reason code per topic filter of the request, in order.
    public struct SubAck: Hashable, Sendable {
        public var packetIdentifier: UInt16
        /// Reason String and User Property.
        public var properties: Properties
        /// At least one.
        public var reasonCodes: [ReasonCode]

        /// Creates a SUBACK or UNSUBACK.
        public init(packetIdentifier: UInt16, reasonCodes: [ReasonCode], properties: Properties = Properties()) {
            self.packetIdentifier = packetIdentifier
            self.properties = properties
            self.reasonCodes = reasonCodes
        }
    }

    /// UNSUBSCRIBE (§3.10): one or more topic filters to remove.
    public struct Unsubscribe: Hashable, Sendable {
        public var packetIdentifier: UInt16
        /// User Property.
        public var properties: Properties
        /// At least one.
        public var topicFilters: [String]

        /// Creates an UNSUBSCRIBE.
        public init(packetIdentifier: UInt16, topicFilters: [String], properties: Properties = Properties()) {
            self.packetIdentifier = packetIdentifier
            self.properties = properties
            self.topicFilters = topicFilters
        }
    }

    /// DISCONNECT (§3.14) or AUTH (§3.15): a reason code and properties.
    public struct Disconnect: Hashable, Sendable {
        public var reasonCode: ReasonCode
        /// DISCONNECT: Session Expiry Interval, Reason String, Server Reference, User Property. AUTH: Authentication
        /// Method and Data, Reason String, User Property.
        public var properties: Properties

        /// Creates a DISCONNECT or AUTH.
        public init(reasonCode: ReasonCode = .normalDisconnection, properties: Properties = Properties()) {
            self.reasonCode = reasonCode
            self.properties = properties
        }
    }
}
