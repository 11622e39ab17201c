/// One D-Bus message: the fixed header, the header fields in the order they came, and the body.
///
/// The header fields are kept as a list rather than spread over properties, so that a decoded message re-encodes
/// byte for byte, unknown fields included; the accessors (``path``, ``member``...) read and write that list.
public struct DBusMessage: Hashable, Sendable {
    /// The four message types, and any other the peer sends (which the specification says to ignore).
    public enum MessageType: Hashable, Sendable {
        /// 1: a method call; may want a reply.
        case methodCall
        /// 2: a method's reply.
        case methodReturn
        /// 3: an error reply.
        case error
        /// 4: a signal.
        case signal
        /// Another type; such a message must be ignored.
        case unknown(UInt8)

        /// The type's byte on the wire.
        public var rawValue: UInt8 {
            switch self {
            case .methodCall: 1
            case .methodReturn: 2
            case .error: 3
            case .signal: 4
            case .unknown(let raw): raw
            }
        }

        /// The type of a byte; 0 is invalid and gives nil.
        public init?(rawValue: UInt8) {
            switch rawValue {
            case 0: return nil
            case 1: self = .methodCall
            case 2: self = .methodReturn
            case 3: self = .error
            case 4: self = .signal
            default: self = .unknown(rawValue)
            }
        }
    }

    /// The header field codes of the specification.
    public enum FieldCode: UInt8, Sendable {
        /// The object path of a call or signal (`o`).
        case path = 1
        /// The interface (`s`).
        case interface = 2
        /// The method or signal name (`s`).
        case member = 3
        /// The error's name (`s`).
        case errorName = 4
        /// The serial this message answers (`u`).
        case replySerial = 5
        /// The bus name the message is for (`s`).
        case destination = 6
        /// The unique name of the sender, set by the bus (`s`).
        case sender = 7
        /// The body's signature (`g`).
        case signature = 8
        /// How many descriptors accompany the message (`u`).
        case unixFDs = 9
    }

    /// `NO_REPLY_EXPECTED`: the caller does not want a reply.
    public static let noReplyExpected: UInt8 = 0x1
    /// `NO_AUTO_START`: the bus must not start the destination.
    public static let noAutoStart: UInt8 = 0x2
    /// `ALLOW_INTERACTIVE_AUTHORIZATION`.
    public static let allowInteractiveAuthorization: UInt8 = 0x4

    /// Whether the message is (or is to be) encoded big-endian.
    public var bigEndian: Bool
    /// The message's type.
    public var type: MessageType
    /// The flag bits (``noReplyExpected``...).
    public var flags: UInt8
    /// The serial, unique per sender and never 0; a client sets it when it sends.
    public var serial: UInt32
    /// The header fields in their order: a code (known or not) and its variant's value.
    public var fields: [(code: UInt8, value: DBusValue)]
    /// The body's values; their types make up the signature.
    public var body: [DBusValue]

    /// Creates a message; see the `methodCall`, `signal`... factories.
    public init(
        type: MessageType,
        flags: UInt8 = 0,
        serial: UInt32 = 0,
        fields: [(code: UInt8, value: DBusValue)] = [],
        body: [DBusValue] = [],
        bigEndian: Bool = false
    ) {
        self.type = type
        self.flags = flags
        self.serial = serial
        self.fields = fields
        self.body = body
        self.bigEndian = bigEndian
    }

    /// A method call.
    ///
    /// - Throws: ``DBusError`` for an invalid path, interface, member or destination.
    public static func methodCall(
        destination: String?,
        path: String,
        interface: String?,
        member: String,
        body: [DBusValue] = [],
        flags: UInt8 = 0
    ) throws(DBusError) -> DBusMessage {
        try DBusNames.validateObjectPath(path)
        try DBusNames.validateMember(member)
        var fields: [(code: UInt8, value: DBusValue)] = [(FieldCode.path.rawValue, .objectPath(path))]
        if let interface {
            try DBusNames.validateInterface(interface)
            fields.append((FieldCode.interface.rawValue, .string(interface)))
        }
        fields.append((FieldCode.member.rawValue, .string(member)))
        if let destination {
            try DBusNames.validateBusName(destination)
            fields.append((FieldCode.destination.rawValue, .string(destination)))
        }
        var message = DBusMessage(type: .methodCall, flags: flags, fields: fields, body: body)
        message.setSignatureField()
        return message
    }

    /// A signal.
    ///
    /// - Throws: ``DBusError`` for an invalid path, interface or member.
    public static func signal(
        path: String,
        interface: String,
        member: String,
        body: [DBusValue] = []
    ) throws(DBusError) -> DBusMessage {
        try DBusNames.validateObjectPath(path)
        try DBusNames.validateInterface(interface)
        try DBusNames.validateMember(member)
        var message = DBusMessage(
            type: .signal,
            fields: [
                (FieldCode.path.rawValue, .objectPath(path)), (FieldCode.interface.rawValue, .string(interface)),
                (FieldCode.member.rawValue, .string(member)),
            ],
            body: body
        )
        message.setSignatureField()
        return message
    }

    /// A reply to `call`, addressed to its sender.
    public static func methodReturn(to call: DBusMessage, body: [DBusValue] = []) -> DBusMessage {
        var fields: [(code: UInt8, value: DBusValue)] = [(FieldCode.replySerial.rawValue, .uint32(call.serial))]
        if let sender = call.sender { fields.append((FieldCode.destination.rawValue, .string(sender))) }
        var message = DBusMessage(type: .methodReturn, fields: fields, body: body)
        message.setSignatureField()
        return message
    }

    /// Sets the signature field from the body's types (and removes it for an empty body).
    public mutating func setSignatureField() {
        let signature = DBusType.signature(of: body.map(\.type))
        fields.removeAll { $0.code == FieldCode.signature.rawValue }
        if !signature.isEmpty { fields.append((FieldCode.signature.rawValue, .signature(signature))) }
    }

    /// The value of the first field with `code`.
    public func field(_ code: FieldCode) -> DBusValue? {
        fields.first { $0.code == code.rawValue }?.value
    }

    /// The `PATH` field.
    public var path: String? { field(.path)?.stringValue }
    /// The `INTERFACE` field.
    public var interface: String? { field(.interface)?.stringValue }
    /// The `MEMBER` field.
    public var member: String? { field(.member)?.stringValue }
    /// The `ERROR_NAME` field.
    public var errorName: String? { field(.errorName)?.stringValue }
    /// The `DESTINATION` field.
    public var destination: String? { field(.destination)?.stringValue }
    /// The `SENDER` field.
    public var sender: String? { field(.sender)?.stringValue }
    /// The `SIGNATURE` field; "" when absent.
    public var signature: String { field(.signature)?.stringValue ?? "" }
    /// The `REPLY_SERIAL` field.
    public var replySerial: UInt32? {
        if case .uint32(let serial) = field(.replySerial) { return serial }
        return nil
    }
    /// The `UNIX_FDS` field; 0 when absent.
    public var unixFDs: UInt32 {
        if case .uint32(let count) = field(.unixFDs) { return count }
        return 0
    }

    public static func == (lhs: DBusMessage, rhs: DBusMessage) -> Bool {
        lhs.bigEndian == rhs.bigEndian && lhs.type == rhs.type && lhs.flags == rhs.flags && lhs.serial == rhs.serial
            && lhs.fields.map(\.code) == rhs.fields.map(\.code) && lhs.fields.map(\.value) == rhs.fields.map(\.value)
            && lhs.body == rhs.body
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(serial)
        hasher.combine(body)
    }
}
