/// One typed D-Bus value.
///
/// Containers say their element types, so that an empty array still has a signature. A dict (`a{KV}`) is an
/// ``array(_:_:)`` of ``dictEntry(_:_:)`` values whose element type is ``DBusType/dictEntry(key:value:)``.
///
/// Only the cases that hold another value directly are `indirect`: marking the whole enum would box every number
/// and string, an allocation per value decoded.
public enum DBusValue: Hashable, Sendable {
    /// `y`.
    case byte(UInt8)
    /// `b`.
    case boolean(Bool)
    /// `n`.
    case int16(Int16)
    /// `q`.
    case uint16(UInt16)
    /// `i`.
    case int32(Int32)
    /// `u`.
    case uint32(UInt32)
    /// `x`.
    case int64(Int64)
    /// `t`.
    case uint64(UInt64)
    /// `d`.
    case double(Double)
    /// `s`.
    case string(String)
    /// `o`; build it with ``objectPath(validating:)`` to check it.
    case objectPath(String)
    /// `g`.
    case signature(String)
    /// `h`: an index into the message's descriptors (``DBusMessage/unixFDs``).
    case unixFD(UInt32)
    /// `aT`: the element type, then the elements, each of that type.
    case array(DBusType, [DBusValue])
    /// `(...)`: the fields, at least one.
    case structure([DBusValue])
    /// `{KV}`: one entry of a dict.
    indirect case dictEntry(DBusValue, DBusValue)
    /// `v`: a value with its own type.
    indirect case variant(DBusValue)

    /// The value's type.
    public var type: DBusType {
        switch self {
        case .byte: .byte
        case .boolean: .boolean
        case .int16: .int16
        case .uint16: .uint16
        case .int32: .int32
        case .uint32: .uint32
        case .int64: .int64
        case .uint64: .uint64
        case .double: .double
        case .string: .string
        case .objectPath: .objectPath
        case .signature: .signature
        case .unixFD: .unixFD
        case .array(let element, _): .array(element)
        case .structure(let fields): .structure(fields.map(\.type))
        case .dictEntry(let key, let value): .dictEntry(key: key.type, value: value.type)
        case .variant: .variant
        }
    }

    /// A dict `a{KV}` from its entries, in order.
    public static func dictionary(key: DBusType, value: DBusType, _ entries: [(DBusValue, DBusValue)]) -> DBusValue {
        .array(.dictEntry(key: key, value: value), entries.map { .dictEntry($0.0, $0.1) })
    }

    /// An object path, checked against the specification's rules.
    ///
    /// - Throws: ``DBusError`` with ``DBusError/Code/invalidObjectPath``.
    public static func objectPath(validating path: String) throws(DBusError) -> DBusValue {
        try DBusNames.validateObjectPath(path)
        return .objectPath(path)
    }

    /// The string inside a `s`, `o` or `g` value, or a variant holding one.
    public var stringValue: String? {
        switch self {
        case .string(let text), .objectPath(let text), .signature(let text): text
        case .variant(let inner): inner.stringValue
        default: nil
        }
    }

    /// The entries of a dict with string keys (`a{sv}`, `a{ss}`...), keyed by string; nil for anything else.
    public var stringDictionary: [String: DBusValue]? {
        guard case .array(.dictEntry(key: .string, value: _), let entries) = self else { return nil }
        var result: [String: DBusValue] = [:]
        for case .dictEntry(.string(let key), let value) in entries { result[key] = value }
        return result
    }

    /// The value inside a variant, or the value itself.
    public var unwrapped: DBusValue {
        if case .variant(let inner) = self { return inner.unwrapped }
        return self
    }
}
