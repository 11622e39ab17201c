import Foundation
import Herald

/// How `observe`, `wait` and `get --json` print a notification: a human line or a JSON line.
enum OutputStyle: Sendable {
    /// `2026-11-23T10:15:30.123Z session.willResignActive {"user":"alice"} (pid 1234)`.
    case human
    /// One JSON object per line, for scripts.
    case json
}

/// The text the CLI prints: notification lines, drop notices, times, JSON and base64.
///
/// Everything here is a pure function of its inputs, so the output is the same on every run and the end-to-end
/// tests can assert on it exactly. Every line this type returns ends with a newline and contains no other: a
/// notification is always one line, whatever its payload holds.
enum OutputFormat {
    /// The line printed for one notification, ending with a newline.
    ///
    /// Human style is `TIME NAME PAYLOAD (pid N)`, with ` [retained]` appended for a retained value. The payload is
    /// compact JSON when it parses as JSON, `base64:…` otherwise, and left out when it is empty (a post that cleared a
    /// retained value). JSON style is an object with `name`, `payload` (or `payloadBase64` when the payload is not
    /// JSON), `seq`, `time`, `sender` and `retained`, in that order. A relayed post's origin (a bridge's import)
    /// follows: ` from HOST` after the pid in human style, an `origin` member (`host`, `daemon`, `sequence`) last in
    /// JSON style.
    static func line(for notification: HeraldNotification, style: OutputStyle) -> String {
        let time = timestamp(nanoseconds: notification.timeNanoseconds)
        let json = notification.payload.isEmpty ? nil : JSONValue.decode(notification.payload)
        switch style {
        case .human:
            var fields = [time, notification.name]
            if let json {
                fields.append(render(json))
            } else if !notification.payload.isEmpty {
                fields.append("base64:" + base64(notification.payload))
            }
            if let origin = notification.origin {
                fields.append("(pid \(notification.sender.pid) from \(origin.host))")
            } else {
                fields.append("(pid \(notification.sender.pid))")
            }
            if notification.isRetained {
                fields.append("[retained]")
            }
            return fields.joined(separator: " ") + "\n"
        case .json:
            let payloadMember =
                json.map { (key: "payload", value: render($0)) }
                ?? (key: "payloadBase64", value: quoted(base64(notification.payload)))
            let sender = object([
                ("pid", String(notification.sender.pid)),
                ("uid", String(notification.sender.uid)),
                ("gid", String(notification.sender.gid)),
            ])
            var members = [
                ("name", quoted(notification.name)),
                payloadMember,
                ("seq", String(notification.sequence)),
                ("time", quoted(time)),
                ("sender", sender),
                ("retained", notification.isRetained ? "true" : "false"),
            ]
            if let origin = notification.origin {
                members.append(
                    (
                        "origin",
                        object([
                            ("host", quoted(origin.host)),
                            ("daemon", quoted(origin.daemon)),
                            ("sequence", String(origin.sequence)),
                        ])
                    )
                )
            }
            return object(members) + "\n"
        }
    }

    /// The line printed where the daemon dropped notifications because this process read too slowly.
    ///
    /// Human: `-- dropped 3 notifications (sequences 100-104) --`. JSON:
    /// `{"notice":"dropped","count":3,"firstSequence":100,"lastSequence":104}`.
    static func droppedLine(count: UInt64, firstSequence: UInt64, lastSequence: UInt64, style: OutputStyle) -> String {
        switch style {
        case .human:
            let noun = count == 1 ? "notification" : "notifications"
            return "-- dropped \(count) \(noun) (sequences \(firstSequence)-\(lastSequence)) --\n"
        case .json:
            return object([
                ("notice", quoted("dropped")),
                ("count", String(count)),
                ("firstSequence", String(firstSequence)),
                ("lastSequence", String(lastSequence)),
            ]) + "\n"
        }
    }

    /// The line printed when the connection to heraldd was lost and made again (`observe --reconnect`): posts made
    /// meanwhile were missed.
    ///
    /// Human: `-- reconnected to heraldd; posts made while it was away were missed --`. JSON:
    /// `{"notice":"reconnected"}`.
    static func reconnectedLine(style: OutputStyle) -> String {
        switch style {
        case .human: "-- reconnected to heraldd; posts made while it was away were missed --\n"
        case .json: object([("notice", quoted("reconnected"))]) + "\n"
        }
    }

    /// The time as ISO 8601 in UTC with milliseconds, e.g. `2026-11-23T10:15:30.123Z`.
    ///
    /// Computed from the daemon's nanosecond count with integer arithmetic (the proleptic Gregorian calendar, as
    /// ISO 8601 uses), so no time zone, locale or floating-point rounding can change it. Milliseconds are truncated,
    /// not rounded, so a time never prints as later than it was.
    ///
    /// - Parameter nanoseconds: Nanoseconds since 1970-01-01T00:00:00Z.
    static func timestamp(nanoseconds: UInt64) -> String {
        let seconds = nanoseconds / 1_000_000_000
        let milliseconds = nanoseconds % 1_000_000_000 / 1_000_000
        let days = seconds / 86_400
        let secondOfDay = seconds % 86_400

        // Howard Hinnant's civil_from_days, for days since the epoch that cannot be negative.
        let shifted = days + 719_468
        let era = shifted / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)

        return "\(padded(year, 4))-\(padded(month, 2))-\(padded(day, 2))T"
            + "\(padded(secondOfDay / 3_600, 2)):\(padded(secondOfDay % 3_600 / 60, 2)):\(padded(secondOfDay % 60, 2))"
            + ".\(padded(milliseconds, 3))Z"
    }

    /// A duration for people, largest unit first: `45s`, `3m 05s`, `2h 00m 07s`, `4d 01h 00m 00s`.
    static func uptime(seconds: UInt64) -> String {
        let days = seconds / 86_400
        let hours = seconds % 86_400 / 3_600
        let minutes = seconds % 3_600 / 60
        let rest = seconds % 60
        if days > 0 {
            return "\(days)d \(padded(hours, 2))h \(padded(minutes, 2))m \(padded(rest, 2))s"
        }
        if hours > 0 {
            return "\(hours)h \(padded(minutes, 2))m \(padded(rest, 2))s"
        }
        if minutes > 0 {
            return "\(minutes)m \(padded(rest, 2))s"
        }
        return "\(rest)s"
    }

    /// A JSON value as compact JSON text on one line: the library's own encoding (keys sorted by their UTF-8 bytes,
    /// whole numbers a double holds exactly without a fraction), so the CLI prints what other processes compare.
    static func render(_ value: JSONValue) -> String {
        String(decoding: value.encoded, as: UTF8.self)
    }

    /// A JSON object from members whose values are already JSON text, in the order given.
    static func object(_ members: [(key: String, value: String)]) -> String {
        "{" + members.map { quoted($0.key) + ":" + $0.value }.joined(separator: ",") + "}"
    }

    /// The string as a JSON string literal: quoted, with quotes, backslashes and control characters escaped.
    static func quoted(_ string: String) -> String {
        render(.string(string))
    }

    /// The bytes in standard base64 (RFC 4648, section 4) with `=` padding.
    static func base64(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString()
    }

    /// The number in decimal, left-padded with zeros to `width` digits.
    private static func padded(_ value: UInt64, _ width: Int) -> String {
        let digits = String(value)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }
}
