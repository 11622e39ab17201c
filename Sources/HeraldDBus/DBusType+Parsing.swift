extension DBusType {
    /// The longest signature the specification allows, in bytes.
    public static let maximumSignatureLength = 255
    /// How deeply arrays may nest in one signature.
    public static let maximumArrayDepth = 32
    /// How deeply structs (and dict entries) may nest in one signature.
    public static let maximumStructDepth = 32
    /// How deeply containers (arrays, structs, dict entries, variants) may nest in one value.
    public static let maximumTotalDepth = 64

    /// Parses a signature into its sequence of complete types; the empty signature gives none.
    ///
    /// - Throws: ``DBusError`` with ``DBusError/Code/invalidSignature`` for a signature longer than 255 bytes, an
    ///   unknown type code, an unbalanced or empty struct, a dict entry outside an array or with a non-basic key,
    ///   and ``DBusError/Code/nestingTooDeep`` past 32 arrays or 32 structs.
    public static func parse(signature: String) throws(DBusError) -> [DBusType] {
        var text = signature
        return try text.withUTF8 { bytes in Result { () throws(DBusError) in try parse(signature: bytes) } }.get()
    }

    /// Parses a signature given as its bytes; see ``parse(signature:)``.
    public static func parse(signature bytes: UnsafeBufferPointer<UInt8>) throws(DBusError) -> [DBusType] {
        guard bytes.count <= maximumSignatureLength else {
            throw DBusError(.invalidSignature, "a signature of \(bytes.count) bytes (at most 255)")
        }
        var parser = SignatureParser(bytes: bytes)
        var types: [DBusType] = []
        while parser.position < bytes.count {
            types.append(try parser.completeType(arrayDepth: 0, structDepth: 0))
        }
        return types
    }

    /// The basic type (or variant) of a one-byte type code, or nil.
    static func basic(code: UInt8) -> DBusType? {
        switch code {
        case UInt8(ascii: "y"): .byte
        case UInt8(ascii: "b"): .boolean
        case UInt8(ascii: "n"): .int16
        case UInt8(ascii: "q"): .uint16
        case UInt8(ascii: "i"): .int32
        case UInt8(ascii: "u"): .uint32
        case UInt8(ascii: "x"): .int64
        case UInt8(ascii: "t"): .uint64
        case UInt8(ascii: "d"): .double
        case UInt8(ascii: "s"): .string
        case UInt8(ascii: "o"): .objectPath
        case UInt8(ascii: "g"): .signature
        case UInt8(ascii: "h"): .unixFD
        case UInt8(ascii: "v"): .variant
        default: nil
        }
    }

    /// Parses a signature that must hold exactly one complete type, such as a variant's.
    ///
    /// - Throws: ``DBusError`` as ``parse(signature:)`` does, and when there is not exactly one type.
    public static func parseSingle(signature: String) throws(DBusError) -> DBusType {
        let types = try parse(signature: signature)
        guard types.count == 1 else {
            throw DBusError(.invalidSignature, "'\(signature)' is not a single complete type")
        }
        return types[0]
    }
}

/// A recursive-descent parser over the bytes of a signature.
private struct SignatureParser {
    let bytes: UnsafeBufferPointer<UInt8>
    var position = 0

    init(bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    mutating func completeType(arrayDepth: Int, structDepth: Int) throws(DBusError) -> DBusType {
        guard position < bytes.count else {
            throw DBusError(.invalidSignature, "the signature ends inside a container type")
        }
        let code = bytes[position]
        position += 1
        switch code {
        case UInt8(ascii: "y"): return .byte
        case UInt8(ascii: "b"): return .boolean
        case UInt8(ascii: "n"): return .int16
        case UInt8(ascii: "q"): return .uint16
        case UInt8(ascii: "i"): return .int32
        case UInt8(ascii: "u"): return .uint32
        case UInt8(ascii: "x"): return .int64
        case UInt8(ascii: "t"): return .uint64
        case UInt8(ascii: "d"): return .double
        case UInt8(ascii: "s"): return .string
        case UInt8(ascii: "o"): return .objectPath
        case UInt8(ascii: "g"): return .signature
        case UInt8(ascii: "h"): return .unixFD
        case UInt8(ascii: "v"): return .variant
        case UInt8(ascii: "a"):
            guard arrayDepth < DBusType.maximumArrayDepth else {
                throw DBusError(.nestingTooDeep, "more than 32 nested arrays in a signature")
            }
            if position < bytes.count, bytes[position] == UInt8(ascii: "{") {
                position += 1
                return .array(try dictEntry(arrayDepth: arrayDepth + 1, structDepth: structDepth))
            }
            return .array(try completeType(arrayDepth: arrayDepth + 1, structDepth: structDepth))
        case UInt8(ascii: "("):
            guard structDepth < DBusType.maximumStructDepth else {
                throw DBusError(.nestingTooDeep, "more than 32 nested structs in a signature")
            }
            var fields: [DBusType] = []
            while true {
                guard position < bytes.count else {
                    throw DBusError(.invalidSignature, "a struct is not closed")
                }
                if bytes[position] == UInt8(ascii: ")") {
                    position += 1
                    break
                }
                fields.append(try completeType(arrayDepth: arrayDepth, structDepth: structDepth + 1))
            }
            guard !fields.isEmpty else {
                throw DBusError(.invalidSignature, "an empty struct '()'")
            }
            return .structure(fields)
        case UInt8(ascii: "{"):
            throw DBusError(.invalidSignature, "a dict entry outside an array")
        default:
            throw DBusError(.invalidSignature, "unknown type code '\(Unicode.Scalar(code))' at \(position - 1)")
        }
    }

    /// A dict entry's key and value, after its `{`.
    private mutating func dictEntry(arrayDepth: Int, structDepth: Int) throws(DBusError) -> DBusType {
        guard structDepth < DBusType.maximumStructDepth else {
            throw DBusError(.nestingTooDeep, "more than 32 nested structs in a signature")
        }
        let key = try completeType(arrayDepth: arrayDepth, structDepth: structDepth + 1)
        guard key.isBasic else {
            throw DBusError(.invalidSignature, "a dict entry's key must be a basic type, not '\(key)'")
        }
        let value = try completeType(arrayDepth: arrayDepth, structDepth: structDepth + 1)
        guard position < bytes.count, bytes[position] == UInt8(ascii: "}") else {
            throw DBusError(.invalidSignature, "a dict entry must hold exactly a key and a value")
        }
        position += 1
        return .dictEntry(key: key, value: value)
    }
}
