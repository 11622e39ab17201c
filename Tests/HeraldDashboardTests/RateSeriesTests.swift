import Testing

@testable import HeraldDashboard

@Suite struct RateSeriesTests {
    @Test func countsPostsPerSecondAndForgetsSecondsOutsideTheWindow() {
        var series = RateSeries(capacity: 5)
        series.record(second: 100)
        series.record(second: 100)
        series.record(second: 102)
        #expect(series.count(at: 100) == 2)
        #expect(series.count(at: 101) == 0)
        #expect(series.count(at: 102) == 1)
        #expect(series.values(endingAt: 102) == [0, 0, 2, 0, 1])
        // Moving to 104 keeps 100..104; 105 drops 100.
        series.record(second: 105)
        #expect(series.count(at: 100) == 0)
        #expect(series.values(endingAt: 105) == [0, 1, 0, 0, 1])
    }

    @Test func aJumpPastTheWholeWindowClearsIt() {
        var series = RateSeries(capacity: 3)
        for second in Int64(10)...12 { series.record(second: second, count: 7) }
        series.record(second: 1_000)
        #expect(series.values(endingAt: 1_000) == [0, 0, 1])
    }

    @Test func aPostOlderThanTheWindowIsIgnoredAndALateOneInsideIsCounted() {
        var series = RateSeries(capacity: 3)
        series.record(second: 50)
        series.record(second: 47)
        series.record(second: 49)
        #expect(series.values(endingAt: 50) == [0, 1, 1])
        #expect(series.newestSecond == 50)
    }

    @Test func valuesEndingLaterThanTheNewestSecondShowTheGapAsZeros() {
        var series = RateSeries(capacity: 4)
        series.record(second: 8, count: 3)
        #expect(series.values(endingAt: 10) == [0, 3, 0, 0])
    }
}
