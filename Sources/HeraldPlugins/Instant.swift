/// A point on the daemon's monotonic clock, in nanoseconds since some fixed origin (`CLOCK_MONOTONIC`).
///
/// The supervisor never reads a clock: every event carries the time as one of these, and the statuses it
/// publishes hold them. The owner turns one into wall time for `since` by the offset between its clocks.
public struct Instant: Comparable, Hashable, Sendable, CustomStringConvertible {
    /// Nanoseconds since the clock's origin.
    public var nanoseconds: UInt64

    /// The instant `nanoseconds` after the origin.
    public init(nanoseconds: UInt64) {
        self.nanoseconds = nanoseconds
    }

    public static func < (a: Instant, b: Instant) -> Bool { a.nanoseconds < b.nanoseconds }

    /// The instant `duration` later (or earlier, for a negative one, stopping at the origin).
    public static func + (instant: Instant, duration: Duration) -> Instant {
        let delta = duration.nanoseconds
        if delta >= 0 {
            let (sum, overflow) = instant.nanoseconds.addingReportingOverflow(UInt64(delta))
            return Instant(nanoseconds: overflow ? .max : sum)
        }
        let magnitude = delta.magnitude
        return Instant(nanoseconds: instant.nanoseconds > magnitude ? instant.nanoseconds - magnitude : 0)
    }

    /// The time from `b` to `a`: negative when `a` is earlier.
    public static func - (a: Instant, b: Instant) -> Duration {
        a >= b
            ? .nanoseconds(Int64(clamping: a.nanoseconds - b.nanoseconds))
            : .zero - .nanoseconds(Int64(clamping: b.nanoseconds - a.nanoseconds))
    }

    public var description: String { "\(nanoseconds) ns" }
}

extension Duration {
    /// The duration in whole nanoseconds, saturating at Int64's range (about 292 years).
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        return scaled.addingReportingOverflow(attoseconds / 1_000_000_000).partialValue
    }
}
