/// Reads the big-endian fields of one packet's variable header and payload (§1.5), throwing 0x81 Malformed Packet
/// instead of reading past the packet's end. Internal to the decoder.
struct ByteReader {
    private let bytes: [UInt8]
    private(set) var offset: Int
    private var end: Int
    private let packet: PacketType

    /// Reads `bytes[range]`, the remaining length of one packet of type `packet`.
    init(_ bytes: [UInt8], _ range: Range<Int>, packet: PacketType) {
        self.bytes = bytes
        self.offset = range.lowerBound
        self.end = range.upperBound
        self.packet = packet
    }

    var remaining: Int { end - offset }

    private mutating func take(_ count: Int, _ field: String) throws(PacketError) -> Range<Int> {
        guard remaining >= count else {
            throw .malformed("\(packet) ends inside its \(field)")
        }
        defer { offset += count }
        return offset..<offset + count
    }

    mutating func u8(_ field: String) throws(PacketError) -> UInt8 {
        bytes[try take(1, field).lowerBound]
    }

    mutating func u16(_ field: String) throws(PacketError) -> UInt16 {
        let at = try take(2, field).lowerBound
        return UInt16(bytes[at]) << 8 | UInt16(bytes[at + 1])
    }

    mutating func u32(_ field: String) throws(PacketError) -> UInt32 {
        let at = try take(4, field).lowerBound
        return UInt32(bytes[at]) << 24 | UInt32(bytes[at + 1]) << 16 | UInt32(bytes[at + 2]) << 8
            | UInt32(bytes[at + 3])
    }

    mutating func variableInteger(_ field: String) throws(PacketError) -> Int {
        guard let (value, count) = try VariableByteInteger.parse(bytes[offset..<end], field) else {
            throw .malformed("\(packet) ends inside its \(field)")
        }
        offset += count
        return value
    }

    /// Binary Data (§1.5.6): a two-byte length and that many bytes.
    mutating func binary(_ field: String) throws(PacketError) -> [UInt8] {
        let count = Int(try u16(field))
        return Array(bytes[try take(count, field)])
    }

    /// A UTF-8 Encoded String (§1.5.4): well-formed UTF-8 (no surrogates, no overlong forms) without U+0000.
    mutating func string(_ field: String) throws(PacketError) -> String {
        let count = Int(try u16(field))
        let range = try take(count, field)
        guard let text = String(validating: bytes[range], as: UTF8.self) else {
            throw .malformed("\(packet) \(field) is not well-formed UTF-8")
        }
        guard !bytes[range].contains(0) else {
            throw .malformed("\(packet) \(field) contains U+0000")
        }
        return text
    }

    /// Everything left of the packet.
    mutating func rest() -> [UInt8] {
        defer { offset = end }
        return Array(bytes[offset..<end])
    }

    /// Reads the next `count` bytes with a reader of their own, as properties are read: a property that claims
    /// more than its section holds is then malformed, however many bytes follow the section.
    mutating func section(_ count: Int, _ field: String) throws(PacketError) -> ByteReader {
        ByteReader(bytes, try take(count, field), packet: packet)
    }

    /// Checks that the packet has no bytes after its last field.
    func finish() throws(PacketError) {
        guard remaining == 0 else {
            throw .malformed("\(packet) has \(remaining) bytes after its last field")
        }
    }
}
