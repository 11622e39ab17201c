/// JSON string literals (RFC 8259, section 7), for the places that write small JSON documents by hand: a plugin's
/// retained status, an HTTP error body, the dashboard's events.
public enum JSONString {
    /// `text` as a JSON string literal: quoted, with quotation marks, backslashes and control characters escaped
    /// (`\n`, `\r`, `\t`, else `\u00XX`); everything else is kept as it is, UTF-8 included.
    ///
    /// - Parameters:
    ///   - text: the string.
    ///   - safeInScript: also escape `<`, U+2028 and U+2029, so the literal may stand inside an HTML `<script>`
    ///     (no `</script>` can end it) and in any JavaScript source.
    public static func quoted(_ text: String, safeInScript: Bool = false) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20: out += escaped(scalar)
            case "<", "\u{2028}", "\u{2029}":
                if safeInScript { out += escaped(scalar) } else { out.unicodeScalars.append(scalar) }
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    /// `\u` and four hexadecimal digits, for a scalar of the Basic Multilingual Plane.
    private static func escaped(_ scalar: Unicode.Scalar) -> String {
        let hex = String(scalar.value, radix: 16)
        return "\\u" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
    }
}
