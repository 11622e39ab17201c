/// Writes values in the D-Bus wire format into a growing byte array.
///
/// Offsets are counted from the start of `bytes`, which must be the start of the message (or any 8-aligned
/// position of it, such as the body's start), so that alignment is the message's.
public struct Marshaller: Sendable {
    /// The bytes written so far.
    public private(set) var bytes: [UInt8]
    /// Whether numbers are written big-endian (`B`) rather than little-endian (`l`).
    public let bigEndian: Bool

    /// The longest array the specification allows, in bytes.
    public static let maximumArrayLength = 64 * 1024 * 1024

    /// Creates an empty marshaller.
    public init(bigEndian: Bool = false, capacity: Int = 256) {
        self.bigEndian = bigEndian
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    /// Appends zero bytes until the length is a multiple of `alignment`.
    public mutating func pad(to alignment: Int) {
        while bytes.count % alignment != 0 { bytes.append(0) }
    }

    mutating func writeInteger<T: FixedWidthInteger>(_ value: T) {
        pad(to: MemoryLayout<T>.size)
        let ordered = bigEndian ? value.bigEndian : value.littleEndian
        withUnsafeBytes(of: ordered) { bytes.append(contentsOf: $0) }
    }

    /// Overwrites a 32-bit length written earlier at `offset`.
    mutating func patchUInt32(_ value: UInt32, at offset: Int) {
        let ordered = bigEndian ? value.bigEndian : value.littleEndian
        withUnsafeBytes(of: ordered) { raw in
            for index in 0..<4 { bytes[offset + index] = raw[index] }
        }
    }

    mutating func writeString(_ text: String) {
        writeInteger(UInt32(text.utf8.count))
        bytes.append(contentsOf: text.utf8)
        bytes.append(0)
    }

    mutating func writeSignature(_ text: String) {
        bytes.append(UInt8(text.utf8.count))
        bytes.append(contentsOf: text.utf8)
        bytes.append(0)
    }

    /// Appends one value.
    ///
    /// - Throws: ``DBusError`` for a value that cannot be sent: an invalid object path or signature, a string with a
    ///   NUL, an array whose elements are not of its element type or longer than 64 MiB, a dict entry outside an
    ///   array, nesting past the limits.
    public mutating func write(_ value: DBusValue) throws(DBusError) {
        try write(value, depth: 0)
    }

    private mutating func write(_ value: DBusValue, depth: Int) throws(DBusError) {
        switch value {
        case .byte(let byte): bytes.append(byte)
        case .boolean(let flag): writeInteger(UInt32(flag ? 1 : 0))
        case .int16(let number): writeInteger(number)
        case .uint16(let number): writeInteger(number)
        case .int32(let number): writeInteger(number)
        case .uint32(let number): writeInteger(number)
        case .int64(let number): writeInteger(number)
        case .uint64(let number): writeInteger(number)
        case .double(let number): writeInteger(number.bitPattern)
        case .unixFD(let index): writeInteger(index)
        case .string(let text):
            guard !text.utf8.contains(0) else {
                throw DBusError(.badString, "a string with a NUL byte cannot be sent")
            }
            writeString(text)
        case .objectPath(let path):
            try DBusNames.validateObjectPath(path)
            writeString(path)
        case .signature(let text):
            _ = try DBusType.parse(signature: text)
            writeSignature(text)
        case .array(let elementType, let elements):
            try checkDepth(depth)
            writeInteger(UInt32(0))
            let lengthOffset = bytes.count - 4
            // Padding to the element's alignment comes even when the array is empty, and is not counted in its length.
            pad(to: elementType.alignment)
            let start = bytes.count
            for element in elements {
                guard element.type == elementType else {
                    throw DBusError(
                        .bodyMismatch,
                        "an element of type '\(element.type)' in an array of '\(elementType)'"
                    )
                }
                try write(element, depth: depth + 1)
            }
            let length = bytes.count - start
            guard length <= Self.maximumArrayLength else {
                throw DBusError(.badArrayLength, "an array of \(length) bytes (at most 64 MiB)")
            }
            patchUInt32(UInt32(length), at: lengthOffset)
        case .structure(let fields):
            try checkDepth(depth)
            guard !fields.isEmpty else {
                throw DBusError(.invalidSignature, "an empty struct cannot be sent")
            }
            pad(to: 8)
            for field in fields { try write(field, depth: depth + 1) }
        case .dictEntry(let key, let entryValue):
            try checkDepth(depth)
            guard key.type.isBasic else {
                throw DBusError(.invalidSignature, "a dict entry's key must be a basic type, not '\(key.type)'")
            }
            pad(to: 8)
            try write(key, depth: depth + 1)
            try write(entryValue, depth: depth + 1)
        case .variant(let inner):
            try checkDepth(depth)
            let signature = inner.type.description
            _ = try DBusType.parseSingle(signature: signature)
            writeSignature(signature)
            try write(inner, depth: depth + 1)
        }
    }

    private func checkDepth(_ depth: Int) throws(DBusError) {
        guard depth < DBusType.maximumTotalDepth else {
            throw DBusError(.nestingTooDeep, "containers nested more than 64 deep")
        }
    }
}
