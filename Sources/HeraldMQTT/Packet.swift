/// One MQTT 5.0 control packet, in either direction. Field names follow the specification (§3).
///
/// `encode()` and `PacketDecoder` apply the same checks, so a packet that encodes decodes to an equal packet, and a
/// decoded packet encodes (to its shortest form: a PUBACK with reason Success and no properties is two bytes long).
public enum Packet: Hashable, Sendable {
    case connect(Connect)
    case connack(ConnAck)
    case publish(Publish)
    case puback(Acknowledgement)
    case pubrec(Acknowledgement)
    case pubrel(Acknowledgement)
    case pubcomp(Acknowledgement)
    case subscribe(Subscribe)
    case suback(SubAck)
    case unsubscribe(Unsubscribe)
    case unsuback(SubAck)
    case pingreq
    case pingresp
    case disconnect(Disconnect)
    case auth(Disconnect)

    /// The packet's type, the high four bits of its first byte.
    public var type: PacketType {
        switch self {
        case .connect: .connect
        case .connack: .connack
        case .publish: .publish
        case .puback: .puback
        case .pubrec: .pubrec
        case .pubrel: .pubrel
        case .pubcomp: .pubcomp
        case .subscribe: .subscribe
        case .suback: .suback
        case .unsubscribe: .unsubscribe
        case .unsuback: .unsuback
        case .pingreq: .pingreq
        case .pingresp: .pingresp
        case .disconnect: .disconnect
        case .auth: .auth
        }
    }
}

/// The control packet types of §2.1.2; 0 is reserved.
public enum PacketType: UInt8, Sendable, CaseIterable, CustomStringConvertible {
    case connect = 1
    case connack = 2
    case publish = 3
    case puback = 4
    case pubrec = 5
    case pubrel = 6
    case pubcomp = 7
    case subscribe = 8
    case suback = 9
    case unsubscribe = 10
    case unsuback = 11
    case pingreq = 12
    case pingresp = 13
    case disconnect = 14
    case auth = 15

    /// The name as the specification spells it, e.g. `PUBACK`.
    public var description: String {
        switch self {
        case .connect: "CONNECT"
        case .connack: "CONNACK"
        case .publish: "PUBLISH"
        case .puback: "PUBACK"
        case .pubrec: "PUBREC"
        case .pubrel: "PUBREL"
        case .pubcomp: "PUBCOMP"
        case .subscribe: "SUBSCRIBE"
        case .suback: "SUBACK"
        case .unsubscribe: "UNSUBSCRIBE"
        case .unsuback: "UNSUBACK"
        case .pingreq: "PINGREQ"
        case .pingresp: "PINGRESP"
        case .disconnect: "DISCONNECT"
        case .auth: "AUTH"
        }
    }

    /// The fixed header's low four bits, which every type but PUBLISH fixes (§2.1.3).
    var fixedFlags: UInt8 {
        switch self {
        case .pubrel, .subscribe, .unsubscribe: 0b0010
        default: 0
        }
    }
}

/// A Quality of Service level (§4.3). 3 is not one: a packet that says 3 is malformed.
public enum QoS: UInt8, Hashable, Sendable, Comparable {
    case atMostOnce = 0
    case atLeastOnce = 1
    case exactlyOnce = 2

    public static func < (a: QoS, b: QoS) -> Bool { a.rawValue < b.rawValue }
}

extension Packet {
    /// Checks a UTF-8 Encoded String the encoder is given: the decoder refuses U+0000 and more than 65,535 bytes,
    /// so the encoder does too (Swift strings are well-formed UTF-8 already).
    /// The field's name is built only for the error: each packet checks several strings, and interpolating a name
    /// for each cost more than the check (perf, the bridge's decoder).
    static func checkString(_ text: String, _ field: @autoclosure () -> String) throws(PacketError) {
        let count = text.utf8.count
        guard count <= 65_535 else { throw .malformed("\(field()) of \(count) bytes is over 65,535") }
        // In place where the bytes are contiguous (a native string always is): `contains` over the UTF-8 view steps
        // index by index, and was 2 to 3 % of each bridge's samples (perf), five user properties a message.
        let hasZero = text.utf8.withContiguousStorageIfAvailable { $0.contains(0) } ?? text.utf8.contains(0)
        guard !hasZero else { throw .malformed("\(field()) contains U+0000") }
    }
}
