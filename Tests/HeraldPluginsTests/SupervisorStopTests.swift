import HeraldPlugins
import Testing

struct SupervisorStopTests {
    private typealias H = SupervisorHarness

    @Test func stopSendsSIGTERMThenSIGKILLTwoSecondsLater() {
        var harness = H()
        let pid = harness.startAll([H.plugin("a")])["a"]!
        let stop = harness.supervisor.stopRequested("a", now: harness.now)
        #expect(stop.signals == ["terminate \(pid)"])
        #expect(stop.published["a"]?.state == .stopping)
        #expect(stop.wake == harness.now + .seconds(2))
        #expect(harness.fireTimer(at: harness.now + .milliseconds(1999)).signals.isEmpty)
        let kill = harness.fireTimer(at: stop.wake!)
        #expect(kill.signals == ["kill \(pid)"])
        let exit = harness.exited(pid, .killed(signal: 9))
        #expect(exit.published["a"]?.state == .stopped)
        #expect(exit.published["a"]?.lastExit == "killed by signal 9 (SIGKILL)")
        #expect(exit.spawns.isEmpty && exit.wake == nil, "an exit after a stop request is not a failure")
    }

    @Test func aPluginThatExitsOnSIGTERMGetsNoSIGKILL() {
        var harness = H()
        let pid = harness.startAll([H.plugin("a")])["a"]!
        let stop = harness.supervisor.stopRequested("a", now: harness.now)
        harness.advance(by: .milliseconds(30))
        #expect(harness.exited(pid, .exited(0)).published["a"]?.state == .stopped)
        #expect(harness.fireTimer(at: stop.wake!).signals.isEmpty)
    }

    @Test func stopCancelsAPendingRestart() {
        var harness = H()
        let pid = harness.startAll([H.plugin("a")])["a"]!
        let crash = harness.exited(pid, .exited(1))
        #expect(harness.supervisor.stopRequested("a", now: harness.now).published["a"]?.state == .stopped)
        #expect(harness.fireTimer(at: crash.wake!).spawns.isEmpty)
    }

    @Test func restartRequestStopsTheProcessThenStartsANewOne() {
        var harness = H()
        let pid = harness.startAll([H.plugin("a")])["a"]!
        #expect(harness.supervisor.restartRequested("a", now: harness.now).signals == ["terminate \(pid)"])
        let exit = harness.exited(pid, .exited(143))
        #expect(exit.spawns == ["a"])
        #expect(exit.published["a"]?.restarts == 0, "a requested restart is not counted")
    }

    @Test func shutdownCompletesOnlyWhenEveryPluginHasExited() {
        var harness = H()
        let pids = harness.startAll([H.plugin("a"), H.plugin("b"), H.plugin("c"), H.plugin("m", .manual)])
        let crash = harness.exited(pids["c"]!, .exited(1))
        #expect(crash.wake != nil, "c waits to restart")
        let shutdown = harness.supervisor.shutdownBegan(now: harness.now)
        #expect(shutdown.signals == ["terminate \(pids["a"]!)", "terminate \(pids["b"]!)"])
        #expect(shutdown.published["c"]?.state == .stopped, "the pending restart is cancelled")
        #expect(!shutdown.completesShutdown)
        #expect(harness.fireTimer(at: crash.wake!).spawns.isEmpty)
        #expect(!harness.exited(pids["a"]!, .exited(0)).completesShutdown)
        let kill = harness.fireTimer(at: harness.now + .seconds(2))
        #expect(kill.signals == ["kill \(pids["b"]!)"])
        let last = harness.exited(pids["b"]!, .killed(signal: 9))
        #expect(last.completesShutdown)
        #expect(harness.supervisor.startRequested("m", now: harness.now).spawns.isEmpty, "nothing starts after")
    }

    @Test func shutdownWithNoPluginRunningCompletesAtOnce() {
        var harness = H()
        _ = harness.load([H.plugin("m", .manual)])
        #expect(harness.supervisor.shutdownBegan(now: harness.now).completesShutdown)
    }
}
