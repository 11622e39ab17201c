/// Appends the big-endian fields of a packet (§1.5) to an array. Internal to the encoder, which has checked every
/// length before writing.
struct ByteWriter {
    var bytes: [UInt8] = []

    mutating func u8(_ value: UInt8) {
        bytes.append(value)
    }

    mutating func u16(_ value: UInt16) {
        bytes.append(UInt8(value >> 8))
        bytes.append(UInt8(value & 0xff))
    }

    mutating func u32(_ value: UInt32) {
        bytes.append(UInt8(value >> 24))
        bytes.append(UInt8(value >> 16 & 0xff))
        bytes.append(UInt8(value >> 8 & 0xff))
        bytes.append(UInt8(value & 0xff))
    }

    mutating func variableInteger(_ value: Int) {
        VariableByteInteger.append(value, to: &bytes)
    }

    /// Binary Data: the caller has checked it is at most 65,535 bytes.
    mutating func binary(_ value: [UInt8]) {
        u16(UInt16(value.count))
        bytes.append(contentsOf: value)
    }

    /// A UTF-8 Encoded String: the caller has checked it is at most 65,535 bytes.
    mutating func string(_ value: String) {
        u16(UInt16(value.utf8.count))
        bytes.append(contentsOf: value.utf8)
    }

    mutating func append(_ value: [UInt8]) {
        bytes.append(contentsOf: value)
    }
}
