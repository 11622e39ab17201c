/// Reads values in the D-Bus wire format from a message's bytes, checking every rule on the way.
///
/// Positions are offsets into the whole message, so alignment is the message's.
public struct Unmarshaller: ~Copyable {
    let bytes: UnsafeRawBufferPointer
    /// The offset of the next byte to read.
    public internal(set) var position: Int
    /// Where the readable part ends (the body's or the header's end).
    let end: Int
    /// Whether numbers are big-endian (`B`) rather than little-endian (`l`).
    public let bigEndian: Bool
    /// How many descriptors the message carries; a `h` value must be below it.
    let unixFDs: UInt32

    /// Creates a reader of `bytes[position..<end]`.
    public init(
        bytes: UnsafeRawBufferPointer,
        position: Int,
        end: Int,
        bigEndian: Bool,
        unixFDs: UInt32 = 0
    ) {
        self.bytes = bytes
        self.position = position
        self.end = end
        self.bigEndian = bigEndian
        self.unixFDs = unixFDs
    }

    /// Whether everything up to the end has been read.
    public var isAtEnd: Bool { position == end }

    /// Skips the padding to `alignment`, which must be zero bytes.
    mutating func align(_ alignment: Int) throws(DBusError) {
        let target = (position + alignment - 1) & ~(alignment - 1)
        guard target <= end else {
            throw DBusError(.truncated, "the input ends in padding at \(position)")
        }
        while position < target {
            guard bytes[position] == 0 else {
                throw DBusError(.badPadding, "a padding byte of \(bytes[position]) at \(position)")
            }
            position += 1
        }
    }

    mutating func readByte() throws(DBusError) -> UInt8 {
        guard position < end else {
            throw DBusError(.truncated, "the input ends at \(position), inside a value")
        }
        defer { position += 1 }
        return bytes[position]
    }

    mutating func readInteger<T: FixedWidthInteger>(_: T.Type) throws(DBusError) -> T {
        let size = MemoryLayout<T>.size
        try align(size)
        guard end - position >= size else {
            throw DBusError(.truncated, "the input ends at \(end), inside a \(size)-byte number at \(position)")
        }
        let raw = bytes.loadUnaligned(fromByteOffset: position, as: T.self)
        position += size
        return bigEndian ? T(bigEndian: raw) : T(littleEndian: raw)
    }

    /// Reads `count` bytes and the NUL after them as UTF-8 text without NUL inside.
    private mutating func readText(count: Int, what: String) throws(DBusError) -> String {
        guard count < end - position else {
            throw DBusError(.truncated, "a \(what) of \(count) bytes at \(position) runs past the end")
        }
        let text = UnsafeRawBufferPointer(rebasing: bytes[position..<position + count])
        guard bytes[position + count] == 0 else {
            throw DBusError(.badString, "a \(what) at \(position) is not terminated by NUL")
        }
        guard !text.contains(0), let string = String(validating: text, as: UTF8.self) else {
            throw DBusError(.badString, "a \(what) at \(position) is not valid UTF-8 or holds a NUL")
        }
        position += count + 1
        return string
    }

    mutating func readString(what: String = "string") throws(DBusError) -> String {
        let count = try readInteger(UInt32.self)
        return try readText(count: Int(count), what: what)
    }

    mutating func readSignature() throws(DBusError) -> String {
        let count = try readByte()
        return try readText(count: Int(count), what: "signature")
    }

    /// Reads a variant's signature: most are one basic type code, which needs neither a string nor the parser.
    private mutating func readVariantType() throws(DBusError) -> DBusType {
        if end - position >= 3, bytes[position] == 1, bytes[position + 2] == 0,
            let basic = DBusType.basic(code: bytes[position + 1])
        {
            position += 3
            return basic
        }
        return try DBusType.parseSingle(signature: try readSignature())
    }

    /// Reads one value of `type`.
    ///
    /// - Throws: ``DBusError`` for anything the specification forbids: bad padding, truncation, a boolean other
    ///   than 0 or 1, a string that is not UTF-8, an invalid object path or signature, an array whose elements do not
    ///   end at its length, nesting past 64, a `h` past the message's descriptors.
    public mutating func read(_ type: DBusType) throws(DBusError) -> DBusValue {
        try read(type, depth: 0)
    }

    private mutating func read(_ type: DBusType, depth: Int) throws(DBusError) -> DBusValue {
        switch type {
        case .byte: return .byte(try readByte())
        case .boolean:
            let raw = try readInteger(UInt32.self)
            guard raw <= 1 else {
                throw DBusError(.badBoolean, "a boolean of \(raw) at \(position - 4)")
            }
            return .boolean(raw == 1)
        case .int16: return .int16(try readInteger(Int16.self))
        case .uint16: return .uint16(try readInteger(UInt16.self))
        case .int32: return .int32(try readInteger(Int32.self))
        case .uint32: return .uint32(try readInteger(UInt32.self))
        case .int64: return .int64(try readInteger(Int64.self))
        case .uint64: return .uint64(try readInteger(UInt64.self))
        case .double: return .double(Double(bitPattern: try readInteger(UInt64.self)))
        case .unixFD:
            let index = try readInteger(UInt32.self)
            guard index < unixFDs else {
                throw DBusError(.badUnixFD, "descriptor index \(index), but the message carries \(unixFDs)")
            }
            return .unixFD(index)
        case .string: return .string(try readString())
        case .objectPath:
            let path = try readString(what: "object path")
            try DBusNames.validateObjectPath(path)
            return .objectPath(path)
        case .signature:
            let signature = try readSignature()
            _ = try DBusType.parse(signature: signature)
            return .signature(signature)
        case .array(let element):
            try checkDepth(depth)
            let length = Int(try readInteger(UInt32.self))
            guard length <= Marshaller.maximumArrayLength else {
                throw DBusError(.badArrayLength, "an array of \(length) bytes (at most 64 MiB) at \(position - 4)")
            }
            try align(element.alignment)
            let arrayEnd = position + length
            guard arrayEnd <= end else {
                throw DBusError(.truncated, "an array of \(length) bytes at \(position) runs past the end")
            }
            var elements: [DBusValue] = []
            while position < arrayEnd {
                elements.append(try read(element, depth: depth + 1))
            }
            guard position == arrayEnd else {
                throw DBusError(.badArrayLength, "an array's last element ends past its length, at \(position)")
            }
            return .array(element, elements)
        case .structure(let fields):
            try checkDepth(depth)
            try align(8)
            var values: [DBusValue] = []
            values.reserveCapacity(fields.count)
            for field in fields { values.append(try read(field, depth: depth + 1)) }
            return .structure(values)
        case .dictEntry(let key, let value):
            try checkDepth(depth)
            try align(8)
            let keyValue = try read(key, depth: depth + 1)
            return .dictEntry(keyValue, try read(value, depth: depth + 1))
        case .variant:
            try checkDepth(depth)
            return .variant(try read(try readVariantType(), depth: depth + 1))
        }
    }

    private func checkDepth(_ depth: Int) throws(DBusError) {
        guard depth < DBusType.maximumTotalDepth else {
            throw DBusError(.nestingTooDeep, "containers nested more than 64 deep at \(position)")
        }
    }
}
