/// The specification's rules for object paths, interface, member, error and bus names.
public enum DBusNames {
    /// The longest interface, member, error or bus name, in bytes.
    public static let maximumNameLength = 255

    /// Checks an object path: `/`, or `/` followed by elements of `[A-Za-z0-9_]+` separated by single `/`, with no
    /// trailing `/`.
    ///
    /// - Throws: ``DBusError`` with ``DBusError/Code/invalidObjectPath`` saying which rule was broken.
    public static func validateObjectPath(_ path: String) throws(DBusError) {
        let bytes = path.utf8
        guard bytes.first == UInt8(ascii: "/") else {
            throw DBusError(.invalidObjectPath, "'\(path)' does not start with '/'")
        }
        if bytes.count == 1 { return }
        var previousWasSlash = true
        for byte in bytes.dropFirst() {
            if byte == UInt8(ascii: "/") {
                if previousWasSlash {
                    throw DBusError(.invalidObjectPath, "'\(path)' has an empty element")
                }
                previousWasSlash = true
            } else if isElementByte(byte, allowingHyphen: false) {
                previousWasSlash = false
            } else {
                throw DBusError(.invalidObjectPath, "'\(path)' has a character outside [A-Za-z0-9_]")
            }
        }
        if previousWasSlash {
            throw DBusError(.invalidObjectPath, "'\(path)' ends with '/'")
        }
    }

    /// Checks an interface name: two or more elements of `[A-Za-z_][A-Za-z0-9_]*` separated by `.`, at most 255 bytes.
    ///
    /// - Throws: ``DBusError`` with ``DBusError/Code/invalidName``.
    public static func validateInterface(_ name: String) throws(DBusError) {
        try validateDotted(name, kind: "interface name", allowingHyphen: false, allowingLeadingDigit: false)
    }

    /// Checks an error name; the rules are an interface name's.
    ///
    /// - Throws: ``DBusError`` with ``DBusError/Code/invalidName``.
    public static func validateErrorName(_ name: String) throws(DBusError) {
        try validateDotted(name, kind: "error name", allowingHyphen: false, allowingLeadingDigit: false)
    }

    /// Checks a member name: one element of `[A-Za-z_][A-Za-z0-9_]*`, at most 255 bytes.
    ///
    /// - Throws: ``DBusError`` with ``DBusError/Code/invalidName``.
    public static func validateMember(_ name: String) throws(DBusError) {
        let bytes = name.utf8
        guard !bytes.isEmpty, bytes.count <= maximumNameLength else {
            throw DBusError(.invalidName, "member name '\(name)' is empty or longer than 255 bytes")
        }
        guard !isDigit(bytes.first!), bytes.allSatisfy({ isElementByte($0, allowingHyphen: false) }) else {
            throw DBusError(.invalidName, "member name '\(name)' is not of the form [A-Za-z_][A-Za-z0-9_]*")
        }
    }

    /// Checks a bus name: a unique name (`:` then two or more elements of `[A-Za-z0-9_-]+`) or a well-known name
    /// (two or more elements of `[A-Za-z0-9_-]+` not starting with a digit), at most 255 bytes.
    ///
    /// - Throws: ``DBusError`` with ``DBusError/Code/invalidName``.
    public static func validateBusName(_ name: String) throws(DBusError) {
        if name.utf8.first == UInt8(ascii: ":") {
            guard name.utf8.count <= maximumNameLength else {
                throw DBusError(.invalidName, "bus name '\(name)' is longer than 255 bytes")
            }
            try validateDotted(
                String(name.dropFirst()),
                kind: "unique bus name",
                allowingHyphen: true,
                allowingLeadingDigit: true
            )
        } else {
            try validateDotted(name, kind: "bus name", allowingHyphen: true, allowingLeadingDigit: false)
        }
    }

    private static func validateDotted(
        _ name: String,
        kind: String,
        allowingHyphen: Bool,
        allowingLeadingDigit: Bool
    ) throws(DBusError) {
        let bytes = name.utf8
        guard !bytes.isEmpty, bytes.count <= maximumNameLength else {
            throw DBusError(.invalidName, "\(kind) '\(name)' is empty or longer than 255 bytes")
        }
        var elements = 1
        var elementLength = 0
        for byte in bytes {
            if byte == UInt8(ascii: ".") {
                guard elementLength > 0 else {
                    throw DBusError(.invalidName, "\(kind) '\(name)' has an empty element")
                }
                elements += 1
                elementLength = 0
                continue
            }
            guard isElementByte(byte, allowingHyphen: allowingHyphen) else {
                throw DBusError(.invalidName, "\(kind) '\(name)' has a character outside the allowed set")
            }
            if elementLength == 0, isDigit(byte), !allowingLeadingDigit {
                throw DBusError(.invalidName, "\(kind) '\(name)' has an element starting with a digit")
            }
            elementLength += 1
        }
        guard elementLength > 0, elements >= 2 else {
            throw DBusError(.invalidName, "\(kind) '\(name)' needs two or more non-empty elements separated by '.'")
        }
    }

    private static func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    private static func isElementByte(_ byte: UInt8, allowingHyphen: Bool) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"):
            true
        case UInt8(ascii: "-"): allowingHyphen
        default: false
        }
    }
}
