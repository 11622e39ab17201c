public import HeraldDBus

/// Reads typed values out of a `PropertiesChanged` or `GetAll` dictionary, and says why one is refused.
///
/// A service sends what it likes: a property of the wrong type is refused with a reason and leaves the value as it
/// was, never a crash.
public struct PropertyReader {
    /// The properties, unwrapped from their variants.
    public var properties: [String: DBusValue]
    /// The interface they belong to, for the reasons.
    public var interface: String
    /// The reasons of the refusals so far.
    public private(set) var refusals: [String] = []

    /// A reader of `properties` of `interface`.
    public init(_ properties: [String: DBusValue], of interface: String) {
        self.properties = properties.mapValues(\.unwrapped)
        self.interface = interface
    }

    private mutating func refuse(_ name: String, _ expected: String, _ value: DBusValue) {
        refusals.append("\(interface).\(name) must be '\(expected)', not '\(value.type)'")
    }

    /// A `b` property: nil when absent or refused.
    public mutating func bool(_ name: String) -> Bool? {
        guard let value = properties[name] else { return nil }
        if case .boolean(let flag) = value { return flag }
        refuse(name, "b", value)
        return nil
    }

    /// An `s` property.
    public mutating func string(_ name: String) -> String? {
        guard let value = properties[name] else { return nil }
        if case .string(let text) = value { return text }
        refuse(name, "s", value)
        return nil
    }

    /// A `u` property.
    public mutating func uint32(_ name: String) -> UInt32? {
        guard let value = properties[name] else { return nil }
        if case .uint32(let number) = value { return number }
        refuse(name, "u", value)
        return nil
    }

    /// A `t` property.
    public mutating func uint64(_ name: String) -> UInt64? {
        guard let value = properties[name] else { return nil }
        if case .uint64(let number) = value { return number }
        refuse(name, "t", value)
        return nil
    }

    /// An `x` property.
    public mutating func int64(_ name: String) -> Int64? {
        guard let value = properties[name] else { return nil }
        if case .int64(let number) = value { return number }
        refuse(name, "x", value)
        return nil
    }

    /// A `d` property.
    public mutating func double(_ name: String) -> Double? {
        guard let value = properties[name] else { return nil }
        if case .double(let number) = value, number.isFinite { return number }
        refuse(name, "d", value)
        return nil
    }

    /// An `a{sv}` property, unwrapped.
    public mutating func dictionary(_ name: String) -> [String: DBusValue]? {
        guard let value = properties[name] else { return nil }
        if let dictionary = value.stringDictionary { return dictionary.mapValues(\.unwrapped) }
        refuse(name, "a{sv}", value)
        return nil
    }
}
