import HeraldPosix
import Testing

@Suite struct SystemClockTests {
    @Test func realtimeIsAfter2024() {
        // 2024-01-01T00:00:00Z in nanoseconds since the epoch.
        #expect(SystemClock.realtimeNanoseconds() > 1_704_067_200 * 1_000_000_000)
    }

    @Test func monotonicNeverGoesBackwards() {
        let first = SystemClock.monotonicNanoseconds()
        let second = SystemClock.monotonicNanoseconds()
        #expect(second >= first)
    }

    /// A lower bound only: the kernel never wakes a sleeper early (no signal handler runs here), while how late it
    /// wakes depends on the machine's load.
    @Test func sleepsAtLeastTheTimeAsked() {
        for nanoseconds: UInt64 in [0, 20_000, 1_500_000] {
            let start = SystemClock.monotonicNanoseconds()
            SystemClock.sleep(nanoseconds: nanoseconds)
            #expect(SystemClock.monotonicNanoseconds() - start >= nanoseconds)
        }
    }
}
