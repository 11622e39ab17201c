#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Readings of the kernel's clocks in nanoseconds.
///
/// Named so as not to shadow the standard library's `Clock` protocol.
public enum SystemClock {
    /// Wall-clock time (`CLOCK_REALTIME`) in nanoseconds since 1970-01-01 00:00:00 UTC: for timestamps that people
    /// read. It can jump when the clock is set, so do not measure intervals with it.
    public static func realtimeNanoseconds() -> UInt64 {
        nanoseconds(CLOCK_REALTIME)
    }

    /// Time since an arbitrary point such as boot (`CLOCK_MONOTONIC`), in nanoseconds: for timeouts and intervals.
    /// It never goes backwards.
    public static func monotonicNanoseconds() -> UInt64 {
        nanoseconds(CLOCK_MONOTONIC)
    }

    private static func nanoseconds(_ clock: clockid_t) -> UInt64 {
        var time = timespec()
        // clock_gettime cannot fail for these clocks with a valid pointer.
        let result = clock_gettime(clock, &time)
        precondition(result == 0, "clock_gettime failed: \(Errno.current)")
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }
}
