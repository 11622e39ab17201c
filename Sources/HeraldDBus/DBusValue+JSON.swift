extension DBusValue {
    /// The value as JSON for a Herald payload.
    ///
    /// Numbers become numbers, strings, object paths and signatures strings, booleans booleans; variants are
    /// unwrapped; a dict with string or object-path keys becomes an object (other keys are written as their JSON
    /// text); other arrays and structs become arrays; a descriptor index becomes its number.
    public var json: DBusJSON {
        switch self {
        case .byte(let value): .number(Double(value))
        case .boolean(let value): .bool(value)
        case .int16(let value): .number(Double(value))
        case .uint16(let value): .number(Double(value))
        case .int32(let value): .number(Double(value))
        case .uint32(let value): .number(Double(value))
        case .int64(let value): .number(Double(value))
        case .uint64(let value): .number(Double(value))
        case .double(let value): .number(value)
        case .unixFD(let value): .number(Double(value))
        case .string(let text), .objectPath(let text), .signature(let text): .string(text)
        case .variant(let inner): inner.json
        case .structure(let fields): .array(fields.map(\.json))
        case .dictEntry(let key, let value): .array([key.json, value.json])
        case .array(.dictEntry, let entries):
            .object(
                Dictionary(
                    entries.compactMap { entry -> (String, DBusJSON)? in
                        guard case .dictEntry(let key, let value) = entry else { return nil }
                        return (key.stringValue ?? "\(key.json)", value.json)
                    },
                    uniquingKeysWith: { _, last in last }
                )
            )
        case .array(_, let elements): .array(elements.map(\.json))
        }
    }

    /// Converts JSON to a value of `type`.
    ///
    /// A variant takes the natural type of the JSON: a boolean `b`, an integral number `x` (or `d` when not integral
    /// or out of range), a string `s`, an array `av`, an object `a{sv}`, and null an empty `av`.
    ///
    /// - Throws: ``DBusError`` with ``DBusError/Code/jsonMismatch`` when the JSON does not fit the type: a string for a
    ///   number, a fraction or out-of-range number for an integer, a wrong field count for a struct, an invalid
    ///   object path or signature.
    public init(json: DBusJSON, as type: DBusType) throws(DBusError) {
        func mismatch() -> DBusError {
            DBusError(.jsonMismatch, "\(json) does not convert to '\(type)'")
        }
        func integer<T: FixedWidthInteger>(_: T.Type) throws(DBusError) -> T {
            guard case .number(let number) = json, let value = T(exactly: number) else { throw mismatch() }
            return value
        }
        switch type {
        case .byte: self = .byte(try integer(UInt8.self))
        case .int16: self = .int16(try integer(Int16.self))
        case .uint16: self = .uint16(try integer(UInt16.self))
        case .int32: self = .int32(try integer(Int32.self))
        case .uint32: self = .uint32(try integer(UInt32.self))
        case .int64: self = .int64(try integer(Int64.self))
        case .uint64: self = .uint64(try integer(UInt64.self))
        case .unixFD: self = .unixFD(try integer(UInt32.self))
        case .boolean:
            guard case .bool(let flag) = json else { throw mismatch() }
            self = .boolean(flag)
        case .double:
            guard case .number(let number) = json else { throw mismatch() }
            self = .double(number)
        case .string:
            guard case .string(let text) = json, !text.utf8.contains(0) else { throw mismatch() }
            self = .string(text)
        case .objectPath:
            guard case .string(let text) = json else { throw mismatch() }
            self = try .objectPath(validating: text)
        case .signature:
            guard case .string(let text) = json else { throw mismatch() }
            _ = try DBusType.parse(signature: text)
            self = .signature(text)
        case .array(.dictEntry(let keyType, let valueType)):
            guard case .object(let object) = json else { throw mismatch() }
            var entries: [DBusValue] = []
            for key in object.keys.sorted() {
                let keyValue = try DBusValue(json: .string(key), as: keyType)
                entries.append(.dictEntry(keyValue, try DBusValue(json: object[key]!, as: valueType)))
            }
            self = .array(.dictEntry(key: keyType, value: valueType), entries)
        case .array(let element):
            guard case .array(let items) = json else { throw mismatch() }
            var values: [DBusValue] = []
            for item in items { values.append(try DBusValue(json: item, as: element)) }
            self = .array(element, values)
        case .structure(let fieldTypes):
            guard case .array(let items) = json, items.count == fieldTypes.count else { throw mismatch() }
            var values: [DBusValue] = []
            for (item, fieldType) in zip(items, fieldTypes) { values.append(try DBusValue(json: item, as: fieldType)) }
            self = .structure(values)
        case .dictEntry(let keyType, let valueType):
            guard case .array(let items) = json, items.count == 2 else { throw mismatch() }
            self = .dictEntry(try DBusValue(json: items[0], as: keyType), try DBusValue(json: items[1], as: valueType))
        case .variant:
            self = .variant(try DBusValue(naturalJSON: json))
        }
    }

    /// The natural D-Bus value of a JSON value, for a variant.
    private init(naturalJSON json: DBusJSON) throws(DBusError) {
        switch json {
        case .null: self = .array(.variant, [])
        case .bool(let flag): self = .boolean(flag)
        case .number(let number):
            if let integer = Int64(exactly: number) {
                self = .int64(integer)
            } else {
                self = .double(number)
            }
        case .string(let text): self = try DBusValue(json: .string(text), as: .string)
        case .array: self = try DBusValue(json: json, as: .array(.variant))
        case .object: self = try DBusValue(json: json, as: .array(.dictEntry(key: .string, value: .variant)))
        }
    }
}
