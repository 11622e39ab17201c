/// An incremental MQTT 5.0 packet decoder: feed it bytes as they arrive, take out whole packets.
///
/// It checks the Remaining Length against `maximumPacketSize` as soon as the fixed header is in, without buffering
/// the rest, and then every rule the specification lets a receiver check without session state (§2, §3): flags,
/// field bounds, UTF-8, properties allowed in each packet and given once, value ranges, topic names and filters.
/// After it throws, the stream is unusable: the receiver sends DISCONNECT with the error's code and closes;
/// further calls to `next()` throw the same error.
public struct PacketDecoder: Sendable {
    /// The largest packet accepted, fixed header included (the Maximum Packet Size this side announced).
    public let maximumPacketSize: Int

    private var buffer: [UInt8] = []
    private var start = 0
    private var failure: PacketError?

    /// Creates a decoder for one connection.
    ///
    /// - Parameter maximumPacketSize: the largest whole packet accepted, in bytes; the default is the largest any
    ///   packet can be.
    public init(maximumPacketSize: Int = 1 + 4 + VariableByteInteger.maximum) {
        self.maximumPacketSize = maximumPacketSize
    }

    /// Bytes received but not yet returned as packets.
    public var bufferedByteCount: Int { buffer.count - start }

    /// Adds received bytes.
    public mutating func append(contentsOf bytes: some Sequence<UInt8>) {
        compact()
        buffer.append(contentsOf: bytes)
    }

    /// Returns the next whole packet, or nil when more bytes are needed.
    ///
    /// - Throws: `PacketError` for the first violation of the specification; the connection should then be
    ///   answered with a DISCONNECT carrying its code, and closed.
    public mutating func next() throws(PacketError) -> Packet? {
        if let failure { throw failure }
        do {
            return try decodeNext()
        } catch {
            failure = error
            throw error
        }
    }

    private mutating func decodeNext() throws(PacketError) -> Packet? {
        guard buffer.count - start >= 2 else { return nil }
        guard let (length, lengthBytes) = try VariableByteInteger.parse(buffer[(start + 1)...], "Remaining Length")
        else { return nil }
        let size = 1 + lengthBytes + length
        guard size <= maximumPacketSize else {
            throw PacketError(
                .packetTooLarge,
                "a packet of \(size) bytes is over the Maximum Packet Size of \(maximumPacketSize)"
            )
        }
        guard buffer.count - start >= size else { return nil }
        let header = buffer[start]
        let bodyStart = start + 1 + lengthBytes
        start += size
        return try Packet.decode(header: header, buffer, bodyStart..<bodyStart + length)
    }

    /// Drops consumed bytes once they make up most of the buffer, so it stays within one packet plus one read.
    private mutating func compact() {
        if start == buffer.count {
            buffer.removeAll(keepingCapacity: buffer.capacity <= 65_536)
            start = 0
        } else if start > 4096 && start * 2 > buffer.count {
            buffer.removeSubrange(0..<start)
            start = 0
        }
    }
}

extension Packet {
    /// Decodes exactly one whole packet.
    ///
    /// - Throws: `PacketError` for a violation, including 0x81 Malformed Packet when `bytes` holds less or more than
    ///   one packet.
    public static func decode(
        _ bytes: some Sequence<UInt8>,
        maximumPacketSize: Int = 1 + 4 + VariableByteInteger.maximum
    )
        throws(PacketError) -> Packet
    {
        var decoder = PacketDecoder(maximumPacketSize: maximumPacketSize)
        decoder.append(contentsOf: bytes)
        guard let packet = try decoder.next() else {
            throw .malformed("truncated packet: \(decoder.bufferedByteCount) bytes")
        }
        guard decoder.bufferedByteCount == 0 else {
            throw .malformed("\(decoder.bufferedByteCount) bytes after the packet")
        }
        return packet
    }
}
