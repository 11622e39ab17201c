public import Foundation

/// How a terminal client shows room lines to a person.
public struct Transcript: Sendable {
    private let calendar: Calendar

    /// Creates a formatter showing times as HH:mm:ss in `timeZone`.
    public init(timeZone: TimeZone = .current) {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        self.calendar = calendar
    }

    /// `date` as HH:mm:ss.
    public func time(_ date: Date) -> String {
        let parts = calendar.dateComponents([.hour, .minute, .second], from: date)
        func two(_ value: Int?) -> String {
            let value = value ?? 0
            return value < 10 ? "0\(value)" : "\(value)"
        }
        return "\(two(parts.hour)):\(two(parts.minute)):\(two(parts.second))"
    }

    /// The text for one line, without a newline; nil for a line the client skips.
    ///
    /// - `{"activeUsers":2}` → `2 active users`
    /// - a user message → `[10:15:30] alice: hello`
    /// - a system message → `[10:15:30] * alice went away`
    ///
    /// The user and the message are ``escaped(_:)``: anyone can post, and what they post must not reach the
    /// terminal as commands (ESC sequences) nor as lines of its own that look like the room's.
    public func text(for line: ChatLine) -> String? {
        switch line {
        case .status(let status):
            return status.activeUsers == 1 ? "1 active user" : "\(status.activeUsers) active users"
        case .message(let message):
            let time = time(message.date)
            if let user = message.user {
                return "[\(time)] \(Self.escaped(user)): \(Self.escaped(message.message))"
            }
            return "[\(time)] * \(Self.escaped(message.message))"
        case .unknown:
            return nil
        }
    }

    /// `text` with every character that could control a terminal or break a line shown visibly instead: `\e` for
    /// ESC, `\n`, `\r` and `\t`, and `\u{HH}` for the other C0 and C1 controls, DEL, the Unicode line and
    /// paragraph separators and the bidirectional overrides and isolates (which can make a line read differently
    /// from what it holds). Everything else, backslashes included, is unchanged.
    public static func escaped(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: needsEscape) else {
            return text
        }
        var result = ""
        result.unicodeScalars.reserveCapacity(text.unicodeScalars.count + 8)
        for scalar in text.unicodeScalars {
            guard needsEscape(scalar) else {
                result.unicodeScalars.append(scalar)
                continue
            }
            switch scalar {
            case "\u{1B}": result += "\\e"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            default: result += "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
            }
        }
        return result
    }

    private static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F: true
        // LINE SEPARATOR, PARAGRAPH SEPARATOR; the bidi embeddings, overrides and isolates.
        case 0x2028, 0x2029, 0x202A...0x202E, 0x2066...0x2069: true
        default: false
        }
    }
}
