#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A JSON value: what a notification's `userInfo` holds.
///
/// Numbers are `Double`, as in JavaScript; integers up to ±2^53 round-trip exactly and are written without a
/// fraction (`3`, not `3.0`).
public enum JSONValue: Sendable, Hashable, Codable {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// A number.
    case number(Double)
    /// A string.
    case string(String)
    /// An array.
    case array([JSONValue])
    /// An object.
    case object([String: JSONValue])

    /// Decodes one JSON value from UTF-8 bytes.
    ///
    /// Never traps, whatever the bytes: anything that is not exactly one JSON value gives nil.
    ///
    /// - Returns: the value, or nil when the bytes are not JSON.
    public static func decode(_ bytes: [UInt8]) -> JSONValue? {
        guard !bytes.isEmpty else { return nil }
        return try? JSONDecoder().decode(JSONValue.self, from: Data(bytes))
    }

    /// Encodes an object as compact JSON: no whitespace, keys sorted by their UTF-8 bytes, `/` not escaped, and
    /// integral numbers within ±2^53 written as integers.
    ///
    /// The output is deterministic, so equal objects give equal bytes.
    public static func encodeObject(_ object: [String: JSONValue]) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(64)
        JSONValue.object(object).write(to: &output)
        return output
    }

    /// This value as compact JSON, with the same rules as ``encodeObject(_:)``.
    public var encoded: [UInt8] {
        var output: [UInt8] = []
        write(to: &output)
        return output
    }

    /// The member `key` of an object, or nil for a missing key or a value that is not an object.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let object) = self else { return nil }
        return object[key]
    }

    /// The string, or nil for a value that is not a string.
    public var stringValue: String? {
        guard case .string(let value) = self else { return nil }
        return value
    }

    /// The number, or nil for a value that is not a number.
    public var doubleValue: Double? {
        guard case .number(let value) = self else { return nil }
        return value
    }

    /// The Boolean, or nil for a value that is not `true` or `false`.
    public var boolValue: Bool? {
        guard case .bool(let value) = self else { return nil }
        return value
    }

    /// Decodes any JSON value.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    /// Encodes the value; integral numbers within ±2^53 are encoded as integers.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .number(let value):
            if let integer = Self.exactInteger(value) {
                try container.encode(integer)
            } else {
                try container.encode(value)
            }
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    /// `value` as an integer when it is integral and within ±2^53, where every integer is exact.
    package static func exactInteger(_ value: Double) -> Int64? {
        guard value == value.rounded(.towardZero), abs(value) <= 9_007_199_254_740_992 else { return nil }
        return Int64(value)
    }
}

extension JSONValue: ExpressibleByStringLiteral {
    /// A string.
    public init(stringLiteral value: String) {
        self = .string(value)
    }
}

extension JSONValue: ExpressibleByIntegerLiteral {
    /// A number.
    public init(integerLiteral value: Int) {
        self = .number(Double(value))
    }
}

extension JSONValue: ExpressibleByFloatLiteral {
    /// A number.
    public init(floatLiteral value: Double) {
        self = .number(value)
    }
}

extension JSONValue: ExpressibleByBooleanLiteral {
    /// `true` or `false`.
    public init(booleanLiteral value: Bool) {
        self = .bool(value)
    }
}

extension JSONValue: ExpressibleByArrayLiteral {
    /// An array.
    public init(arrayLiteral elements: JSONValue...) {
        self = .array(elements)
    }
}

extension JSONValue: ExpressibleByDictionaryLiteral {
    /// An object; a repeated key keeps its last value.
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}

extension JSONValue: ExpressibleByNilLiteral {
    /// `null`.
    public init(nilLiteral: ()) {
        self = .null
    }
}
