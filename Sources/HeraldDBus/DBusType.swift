/// One complete D-Bus type, as a signature spells it.
///
/// `DBusType` values are built by parsing a signature (``parse(signature:)``), which enforces the specification's
/// limits: at most 255 bytes, 32 nested arrays and 32 nested structs.
public enum DBusType: Hashable, Sendable, CustomStringConvertible {
    /// `y`: an unsigned byte.
    case byte
    /// `b`: a boolean, marshalled as a 32-bit 0 or 1.
    case boolean
    /// `n`: a signed 16-bit integer.
    case int16
    /// `q`: an unsigned 16-bit integer.
    case uint16
    /// `i`: a signed 32-bit integer.
    case int32
    /// `u`: an unsigned 32-bit integer.
    case uint32
    /// `x`: a signed 64-bit integer.
    case int64
    /// `t`: an unsigned 64-bit integer.
    case uint64
    /// `d`: an IEEE 754 double.
    case double
    /// `s`: a UTF-8 string.
    case string
    /// `o`: an object path.
    case objectPath
    /// `g`: a signature.
    case signature
    /// `h`: an index into the message's array of file descriptors.
    case unixFD
    /// `aT`: an array of one element type.
    indirect case array(DBusType)
    /// `(...)`: a struct of one or more fields.
    case structure([DBusType])
    /// `{KV}`: a dict entry; only valid as the element of an array, with a basic key type.
    indirect case dictEntry(key: DBusType, value: DBusType)
    /// `v`: a value that carries its own type.
    case variant

    /// Whether this is a basic type (every type but arrays, structs, dict entries and variants).
    public var isBasic: Bool {
        switch self {
        case .array, .structure, .dictEntry, .variant: false
        default: true
        }
    }

    /// The boundary the type's marshalled form starts on, in bytes.
    public var alignment: Int {
        switch self {
        case .byte, .signature, .variant: 1
        case .int16, .uint16: 2
        case .boolean, .int32, .uint32, .string, .objectPath, .unixFD, .array: 4
        case .int64, .uint64, .double, .structure, .dictEntry: 8
        }
    }

    /// The type's signature, e.g. `a{sv}`.
    public var description: String {
        var text = ""
        append(to: &text)
        return text
    }

    func append(to text: inout String) {
        switch self {
        case .byte: text += "y"
        case .boolean: text += "b"
        case .int16: text += "n"
        case .uint16: text += "q"
        case .int32: text += "i"
        case .uint32: text += "u"
        case .int64: text += "x"
        case .uint64: text += "t"
        case .double: text += "d"
        case .string: text += "s"
        case .objectPath: text += "o"
        case .signature: text += "g"
        case .unixFD: text += "h"
        case .variant: text += "v"
        case .array(let element):
            text += "a"
            element.append(to: &text)
        case .structure(let fields):
            text += "("
            for field in fields { field.append(to: &text) }
            text += ")"
        case .dictEntry(let key, let value):
            text += "{"
            key.append(to: &text)
            value.append(to: &text)
            text += "}"
        }
    }

    /// The signature of a sequence of types, e.g. a message body's.
    public static func signature(of types: [DBusType]) -> String {
        var text = ""
        for type in types { type.append(to: &text) }
        return text
    }
}
