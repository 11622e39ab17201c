/// The fields of a query string or an `application/x-www-form-urlencoded` body: `name=a.b&retain=on`.
public struct FormFields: Sendable, Equatable {
    /// The fields in order, decoded (`+` is a space, `%XX` a byte; invalid UTF-8 is replaced).
    public private(set) var fields: [(name: String, value: String)] = []

    /// Decodes `text`; malformed escapes are kept as they are.
    public init(query text: some StringProtocol) {
        for pair in text.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            fields.append((Self.decode(parts[0]), parts.count > 1 ? Self.decode(parts[1]) : ""))
        }
    }

    /// Decodes a body.
    public init(body: [UInt8]) {
        self.init(query: String(decoding: body, as: UTF8.self))
    }

    /// The first value of the field `name`.
    public subscript(name: String) -> String? {
        fields.first { $0.name == name }?.value
    }

    public static func == (lhs: FormFields, rhs: FormFields) -> Bool {
        lhs.fields.elementsEqual(rhs.fields) { $0.name == $1.name && $0.value == $1.value }
    }

    static func decode(_ text: some StringProtocol) -> String {
        var bytes: [UInt8] = []
        var utf8 = Array(text.utf8)[...]
        while let byte = utf8.popFirst() {
            switch byte {
            case UInt8(ascii: "+"):
                bytes.append(UInt8(ascii: " "))
            case UInt8(ascii: "%") where utf8.count >= 2:
                if let high = hexValue(utf8[utf8.startIndex]), let low = hexValue(utf8[utf8.startIndex + 1]) {
                    bytes.append(high << 4 | low)
                    utf8 = utf8.dropFirst(2)
                } else {
                    bytes.append(byte)
                }
            default:
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
