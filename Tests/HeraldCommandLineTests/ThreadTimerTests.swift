import HeraldCommandLine
import Testing

@Suite struct ThreadTimerTests {
    @Test(.timeLimit(.minutes(10)))
    func theTimeRunsOutAfterTheDurationNotBefore() async {
        let clock = ContinuousClock()
        let start = clock.now
        let ranOut = await ThreadTimer.sleep(for: .milliseconds(200))
        #expect(ranOut)
        #expect(clock.now - start >= .milliseconds(200))
        #expect(await ThreadTimer.sleep(for: .zero))
    }

    @Test(.timeLimit(.minutes(10)))
    func cancellingTheTaskEndsTheWaitAtOnce() async {
        let clock = ContinuousClock()
        let start = clock.now
        let timer = Task { await ThreadTimer.sleep(for: .seconds(3600)) }
        timer.cancel()
        #expect(await timer.value == false)
        // An hour's timer, cancelled: back long before the hour. The bound is loose because it counts the task's
        // wait for the shared pool, which took 31 s in a whole parallel run on two cores kept busy elsewhere too.
        #expect(clock.now - start < .seconds(300))
        // Cancelled before it even began.
        let early = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await ThreadTimer.sleep(for: .seconds(3600))
        }
        #expect(await early.value == false)
    }
}
