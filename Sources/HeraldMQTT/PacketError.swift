/// A violation of the MQTT 5.0 specification met while decoding or encoding a packet.
///
/// `code` is the reason code to put in the DISCONNECT that answers it (0x81 Malformed Packet, 0x82 Protocol Error,
/// 0x95 Packet too large, ...); `reason` says for people what was wrong and where. After a decoder throws one, the
/// connection is unusable: the receiver sends DISCONNECT with `code` and closes.
public struct PacketError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The reason code to disconnect with.
    public var code: ReasonCode
    /// What was wrong, naming the packet and field.
    public var reason: String

    /// Creates an error.
    public init(_ code: ReasonCode, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    public var description: String { "\(code): \(reason)" }

    static func malformed(_ reason: String) -> PacketError { PacketError(.malformedPacket, reason) }

    static func protocolError(_ reason: String) -> PacketError { PacketError(.protocolError, reason) }
}
