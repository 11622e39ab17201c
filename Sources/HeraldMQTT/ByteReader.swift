/// Reads the big-endian fields of one packet's variable header and payload (§1.5), throwing 0x81 Malformed Packet
/// instead of reading past the packet's end. Internal to the decoder.
///
/// A field's name is for the error alone, so it is taken as an autoclosure: names interpolated for every field (the
/// properties' context and name, a heap string each) cost about a dozen allocations per PUBLISH read (perf, the
/// importing bridge).
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

    private mutating func take(_ count: Int, _ field: @autoclosure () -> String) throws(PacketError) -> Range<Int> {
        guard remaining >= count else {
            throw .malformed("\(packet) ends inside its \(field())")
        }
        defer { offset += count }
        return offset..<offset + count
    }

    mutating func u8(_ field: @autoclosure () -> String) throws(PacketError) -> UInt8 {
        bytes[try take(1, field()).lowerBound]
    }

    mutating func u16(_ field: @autoclosure () -> String) throws(PacketError) -> UInt16 {
        let at = try take(2, field()).lowerBound
        return UInt16(bytes[at]) << 8 | UInt16(bytes[at + 1])
    }

    mutating func u32(_ field: @autoclosure () -> String) throws(PacketError) -> UInt32 {
        let at = try take(4, field()).lowerBound
        return UInt32(bytes[at]) << 24 | UInt32(bytes[at + 1]) << 16 | UInt32(bytes[at + 2]) << 8
            | UInt32(bytes[at + 3])
    }

    mutating func variableInteger(_ field: @autoclosure () -> String) throws(PacketError) -> Int {
        guard let (value, count) = try VariableByteInteger.parse(bytes[offset..<end], field()) else {
            throw .malformed("\(packet) ends inside its \(field())")
        }
        offset += count
        return value
    }

    /// Binary Data (§1.5.6): a two-byte length and that many bytes.
    mutating func binary(_ field: @autoclosure () -> String) throws(PacketError) -> [UInt8] {
        let count = Int(try u16(field()))
        return Array(bytes[try take(count, field())])
    }

    /// A UTF-8 Encoded String (§1.5.4): well-formed UTF-8 (no surrogates, no overlong forms) without U+0000.
    mutating func string(_ field: @autoclosure () -> String) throws(PacketError) -> String {
        let count = Int(try u16(field()))
        let range = try take(count, field())
        // The usual string (a topic, a user property) is ASCII without U+0000: checked in one pass and taken as it
        // is. The general check below (String(validating:), generic over the encoding) was 5 % of the importing
        // bridge's samples in perf, each message's topic and five user properties going through it.
        if let text = Self.plainASCII(bytes, range) { return text }
        guard let text = String(validating: bytes[range], as: UTF8.self) else {
            throw .malformed("\(packet) \(field()) is not well-formed UTF-8")
        }
        guard !bytes[range].contains(0) else {
            throw .malformed("\(packet) \(field()) contains U+0000")
        }
        return text
    }

    /// `bytes[range]` as a string when every byte is ASCII and none is 0; nil otherwise.
    private static func plainASCII(_ bytes: [UInt8], _ range: Range<Int>) -> String? {
        bytes.withUnsafeBufferPointer { buffer in
            let slice = UnsafeBufferPointer(rebasing: buffer[range])
            var high: UInt8 = 0
            var zero = false
            for byte in slice {
                high |= byte
                zero = zero || byte == 0
            }
            return high < 0x80 && !zero ? String(decoding: slice, as: UTF8.self) : nil
        }
    }

    /// Everything left of the packet.
    mutating func rest() -> [UInt8] {
        defer { offset = end }
        return Array(bytes[offset..<end])
    }

    /// Reads the next `count` bytes with a reader of their own, as properties are read: a property that claims
    /// more than its section holds is then malformed, however many bytes follow the section.
    mutating func section(_ count: Int, _ field: @autoclosure () -> String) throws(PacketError) -> ByteReader {
        ByteReader(bytes, try take(count, field()), packet: packet)
    }

    /// Checks that the packet has no bytes after its last field.
    func finish() throws(PacketError) {
        guard remaining == 0 else {
            throw .malformed("\(packet) has \(remaining) bytes after its last field")
        }
    }
}
