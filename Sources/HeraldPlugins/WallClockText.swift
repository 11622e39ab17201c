/// Wall-clock times as ISO 8601 text (`2026-11-25T09:00:00Z`), for the plugin states' `since`, without Foundation.
public enum WallClockText {
    /// `nanoseconds` since 1970 (UTC) as `YYYY-MM-DDTHH:MM:SSZ`, to the second.
    public static func iso8601(nanosecondsSince1970 nanoseconds: UInt64) -> String {
        let seconds = Int64(nanoseconds / 1_000_000_000)
        let days = seconds / 86_400
        let second = seconds % 86_400
        // Howard Hinnant's days-to-civil algorithm: days since 1970-01-01 to year, month, day in the proleptic
        // Gregorian calendar, for any day this UInt64 can name.
        let z = days + 719_468
        let era = z / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(second / 3600, 2)):\(pad(second / 60 % 60, 2)):"
            + "\(pad(second % 60, 2))Z"
    }

    private static func pad(_ value: Int64, _ width: Int) -> String {
        let digits = String(value)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }
}
