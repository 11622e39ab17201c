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
}
