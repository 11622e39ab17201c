import HeraldPosix
import Testing

/// The bridges' log limiter: one line a second per kind, counting the rest; the table of kinds is bounded.
struct LogLimiterTests {
    @Test func logsTheFirstEventThenOneLineASecondCountingTheRest() {
        var limiter = LogLimiter()
        let start = ContinuousClock.now
        let result52 = limiter.event("refused", at: start)
        #expect(result52 == 1)
        for step in 1...2_999 {
            let result55 = limiter.event("refused", at: start + .microseconds(step * 100))
            #expect(result55 == nil)
        }
        let result58 = limiter.event("refused", at: start + .seconds(1))
        #expect(result58 == 3_000)
        let result60 = limiter.event("other", at: start + .seconds(1))
        #expect(result60 == 1, "each kind has its own second")
    }

    @Test func kindsInventedByAPeerAreBoundedAndNeverLoseTheCurrentKindsCount() {
        var limiter = LogLimiter()
        let start = ContinuousClock.now
        for kind in 0..<100_000 {
            #expect(limiter.event("reason \(kind)", at: start) == 1)
        }
        #expect(limiter.event("refused", at: start) == 1)
        #expect(limiter.event("refused", at: start + .milliseconds(1)) == nil)
        #expect(limiter.event("refused", at: start + .seconds(1)) == 2, "the one held back and this one")
    }
}
