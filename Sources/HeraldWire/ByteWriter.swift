/// Writes little-endian fields into memory whose size was computed up front. Internal: frames are
/// the only thing written this way, and each checks its size before writing.
struct ByteWriter {
    private let base: UnsafeMutableRawPointer
    private(set) var offset: Int = 0

    init(_ buffer: UnsafeMutableRawBufferPointer) {
        // A zero-size buffer may have a nil base address; no frame is zero bytes long.
        self.base = buffer.baseAddress!
    }

    mutating func u8(_ value: UInt8) {
        base.storeBytes(of: value, toByteOffset: offset, as: UInt8.self)
        offset += 1
    }

    mutating func u16(_ value: UInt16) {
        base.storeBytes(of: value.littleEndian, toByteOffset: offset, as: UInt16.self)
        offset += 2
    }

    mutating func u32(_ value: UInt32) {
        base.storeBytes(of: value.littleEndian, toByteOffset: offset, as: UInt32.self)
        offset += 4
    }

    mutating func i32(_ value: Int32) {
        u32(UInt32(bitPattern: value))
    }

    mutating func u64(_ value: UInt64) {
        base.storeBytes(of: value.littleEndian, toByteOffset: offset, as: UInt64.self)
        offset += 8
    }

    mutating func bytes(_ value: some Collection<UInt8>) {
        let destination = UnsafeMutableRawBufferPointer(start: base + offset, count: value.count)
        destination.copyBytes(from: value)
        offset += value.count
    }

    /// A `str8`: the caller guarantees at most 255 bytes.
    mutating func str8(_ value: String) {
        let utf8 = value.utf8
        u8(UInt8(utf8.count))
        bytes(utf8)
    }
}
