import Foundation
import Herald
import HeraldWire

/// Escaping text for HTML and JSON, and pretty-printing payloads: what the page and the event stream are built from.
public enum Markup {
    /// `text` safe inside HTML text and quoted attributes.
    public static func html(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(character)
            }
        }
        return out
    }

    /// `text` as a JSON string literal; `<` is escaped too, so the text is also safe inside a `<script>`.
    public static func json(_ text: String) -> String {
        JSONString.quoted(text, safeInScript: true)
    }

    /// A payload as JSON indented by two spaces, keys sorted; the bytes as text when they are not JSON, with "…"
    /// added when `truncated` (a cut value is not JSON any more).
    public static func prettyJSON(_ payload: [UInt8], truncated: Bool = false) -> String {
        if !truncated, let value = JSONValue.decode(payload) {
            var out = ""
            write(value, indent: "", to: &out)
            return out
        }
        return String(decoding: payload, as: UTF8.self) + (truncated ? "…" : "")
    }

    private static func write(_ value: JSONValue, indent: String, to out: inout String) {
        let inner = indent + "  "
        switch value {
        case .array(let items) where !items.isEmpty:
            out += "[\n"
            for (index, item) in items.enumerated() {
                out += inner
                write(item, indent: inner, to: &out)
                out += index == items.count - 1 ? "\n" : ",\n"
            }
            out += indent + "]"
        case .object(let members) where !members.isEmpty:
            out += "{\n"
            let keys = members.keys.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
            for (index, key) in keys.enumerated() {
                out += inner + String(decoding: JSONValue.string(key).encoded, as: UTF8.self) + ": "
                write(members[key]!, indent: inner, to: &out)
                out += index == keys.count - 1 ? "\n" : ",\n"
            }
            out += indent + "}"
        default:
            out += String(decoding: value.encoded, as: UTF8.self)
        }
    }

    /// Nanoseconds since 1970 as an ISO 8601 UTC time with milliseconds: "2026-11-28T04:30:00.123Z".
    public static func time(nanoseconds: UInt64) -> String {
        let milliseconds = nanoseconds / 1_000_000
        let date = Date(timeIntervalSince1970: Double(milliseconds) / 1_000)
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        func pad(_ value: Int?, _ width: Int) -> String {
            let text = String(value ?? 0)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return "\(pad(parts.year, 4))-\(pad(parts.month, 2))-\(pad(parts.day, 2))T\(pad(parts.hour, 2)):"
            + "\(pad(parts.minute, 2)):\(pad(parts.second, 2)).\(pad(Int(milliseconds % 1_000), 3))Z"
    }
}
