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
    public func text(for line: ChatLine) -> String? {
        switch line {
        case .status(let status):
            return status.activeUsers == 1 ? "1 active user" : "\(status.activeUsers) active users"
        case .message(let message):
            let time = time(message.date)
            if let user = message.user {
                return "[\(time)] \(user): \(message.message)"
            }
            return "[\(time)] * \(message.message)"
        case .unknown:
            return nil
        }
    }
}
