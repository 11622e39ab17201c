/// ISO 8601 times from a count since the Unix epoch, with no Foundation and no clock: the caller says what time it is.
public enum ISOTime {
    /// `2026-11-28T04:30:00Z` for `microseconds` since 1970-01-01T00:00:00Z (UTC, whole seconds).
    public static func string(microseconds: UInt64) -> String {
        string(seconds: Int64(microseconds / 1_000_000))
    }

    /// `2026-11-28T04:30:00Z` for `seconds` since the epoch.
    public static func string(seconds: Int64) -> String {
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - days * 86_400
        // Howard Hinnant's days-to-civil algorithm.
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        func two(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(year)-\(two(month))-\(two(day))T\(two(secondOfDay / 3600)):\(two(secondOfDay / 60 % 60)):"
            + "\(two(secondOfDay % 60))Z"
    }
}
