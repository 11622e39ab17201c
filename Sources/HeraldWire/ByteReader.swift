/// Reads little-endian fields from one frame's body, throwing `MALFORMED_FRAME` instead of reading
/// past its end. Internal to the decoder.
struct ByteReader {
    private let bytes: UnsafeRawBufferPointer
    private(set) var offset: Int = 0
    private let frameType: FrameType

    init(_ bytes: UnsafeRawBufferPointer, frameType: FrameType) {
        self.bytes = bytes
        self.frameType = frameType
    }

    var remaining: Int { bytes.count - offset }

    private mutating func take(_ count: Int, _ field: StaticString) throws(WireError) -> UnsafeRawBufferPointer {
        guard remaining >= count else {
            throw WireError(
                .malformedFrame,
                "\(frameType) body ends inside its \(field) field (\(bytes.count) bytes)"
            )
        }
        defer { offset += count }
        return UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + count])
    }

    mutating func u8(_ field: StaticString) throws(WireError) -> UInt8 {
        try take(1, field)[0]
    }

    mutating func u16(_ field: StaticString) throws(WireError) -> UInt16 {
        UInt16(littleEndian: try take(2, field).loadUnaligned(as: UInt16.self))
    }

    mutating func u32(_ field: StaticString) throws(WireError) -> UInt32 {
        UInt32(littleEndian: try take(4, field).loadUnaligned(as: UInt32.self))
    }

    mutating func i32(_ field: StaticString) throws(WireError) -> Int32 {
        Int32(bitPattern: try u32(field))
    }

    mutating func u64(_ field: StaticString) throws(WireError) -> UInt64 {
        UInt64(littleEndian: try take(8, field).loadUnaligned(as: UInt64.self))
    }

    /// The bytes of a `str8` field.
    mutating func str8(_ field: StaticString) throws(WireError) -> UnsafeRawBufferPointer {
        let count = Int(try u8(field))
        return try take(count, field)
    }

    /// A `str8` field that must be UTF-8 text (not a name).
    mutating func text8(_ field: StaticString) throws(WireError) -> String {
        let raw = try str8(field)
        guard let text = String(validating: raw, as: UTF8.self) else {
            throw WireError(.malformedFrame, "\(frameType) \(field) is not UTF-8")
        }
        return text
    }

    /// Everything left in the body.
    mutating func rest() -> UnsafeRawBufferPointer {
        defer { offset = bytes.count }
        return UnsafeRawBufferPointer(rebasing: bytes[offset...])
    }

    /// Checks that no bytes are left over after a body's last field.
    func finish() throws(WireError) {
        guard remaining == 0 else {
            throw WireError(.malformedFrame, "\(frameType) body has \(remaining) bytes after its last field")
        }
    }

    /// An origin (wire.md, `POST`, version 2): `host` (not empty) and `daemon` as UTF-8 `str8`, then `sequence`.
    mutating func origin() throws(WireError) -> Frame.Origin {
        let host = try text8("origin host")
        let daemon = try text8("origin daemon")
        let sequence = try u64("origin sequence")
        guard !host.isEmpty else { throw WireError(.malformedFrame, "an origin's host must not be empty") }
        return Frame.Origin(host: host, daemon: daemon, sequence: sequence)
    }
}
