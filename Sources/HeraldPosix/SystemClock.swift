internal import CHeraldShim

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Readings of the kernel's clocks in nanoseconds, and a sleep on the monotonic one.
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

    /// Sleeps the calling thread for at least `nanoseconds` on `CLOCK_MONOTONIC` (the kernel's timer slack, 50 µs
    /// by default, may add to it), or less if a signal handler runs meanwhile.
    public static func sleep(nanoseconds: UInt64) {
        var request = timespec(
            tv_sec: Int(nanoseconds / 1_000_000_000),
            tv_nsec: Int(nanoseconds % 1_000_000_000)
        )
        // Fails only with EINTR (a handler ran: waking early is allowed) or EINVAL (a bad timespec: not these).
        _ = clock_nanosleep(CLOCK_MONOTONIC, 0, &request, nil)
    }

    /// Sets how late the kernel may end the calling thread's sleeps, to gather wake-ups (`PR_SET_TIMERSLACK`; 50 µs
    /// by default): 1 makes a 20 µs ``sleep(nanoseconds:)`` about 20 µs. Per thread; threads it creates later
    /// inherit it.
    ///
    /// - Returns: false where the setting does not exist (not Linux).
    @discardableResult
    public static func setTimerSlack(nanoseconds: UInt) -> Bool {
        herald_set_timer_slack(nanoseconds) == 0
    }

    private static func nanoseconds(_ clock: clockid_t) -> UInt64 {
        var time = timespec()
        // clock_gettime cannot fail for these clocks with a valid pointer.
        let result = clock_gettime(clock, &time)
        precondition(result == 0, "clock_gettime failed: \(Errno.current)")
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }
}
