/// The Variable Byte Integer of MQTT 5.0 (§1.5.5): seven bits a byte, least significant group first, the high bit
/// set on every byte but the last, at most four bytes, so at most 268,435,455.
public enum VariableByteInteger {
    /// The largest value four bytes hold.
    public static let maximum = 268_435_455

    /// How many bytes `value` takes, 1 to 4; `value` must be in `0...maximum`.
    public static func encodedCount(_ value: Int) -> Int {
        precondition(value >= 0 && value <= maximum, "variable byte integer \(value) out of range")
        return value < 128 ? 1 : value < 16_384 ? 2 : value < 2_097_152 ? 3 : 4
    }

    /// Appends `value`, which must be in `0...maximum`, in its shortest form.
    public static func append(_ value: Int, to bytes: inout [UInt8]) {
        precondition(value >= 0 && value <= maximum, "variable byte integer \(value) out of range")
        var rest = value
        repeat {
            var byte = UInt8(rest & 0x7f)
            rest >>= 7
            if rest > 0 { byte |= 0x80 }
            bytes.append(byte)
        } while rest > 0
    }

    /// Reads one from the start of `bytes`.
    ///
    /// - Returns: the value and how many bytes it took, or nil when `bytes` ends before its last byte.
    /// - Throws: `PacketError` 0x81 Malformed Packet for a fifth byte, or for a longer form than needed (the
    ///   specification requires the shortest, so every value has exactly one encoding).
    public static func parse(
        _ bytes: some RandomAccessCollection<UInt8>,
        _ field: @autoclosure () -> String
    ) throws(PacketError) -> (
        value: Int, count: Int
    )? {
        var value = 0
        var index = bytes.startIndex
        for position in 0..<4 {
            guard index != bytes.endIndex else { return nil }
            let byte = bytes[index]
            value |= Int(byte & 0x7f) << (7 * position)
            if byte & 0x80 == 0 {
                guard position == 0 || byte != 0 else {
                    throw .malformed("\(field()) is a variable byte integer of \(position + 1) bytes where fewer do")
                }
                return (value, position + 1)
            }
            index = bytes.index(after: index)
        }
        throw .malformed("\(field()) is a variable byte integer longer than 4 bytes")
    }
}
