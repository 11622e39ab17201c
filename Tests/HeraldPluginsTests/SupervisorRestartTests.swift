import HeraldPlugins
import Testing

struct SupervisorRestartTests {
    private typealias H = SupervisorHarness

    /// Crashes `name` (pid `pid`) right away and returns the delay until the restart it asks for.
    private func crash(_ harness: inout H, _ pid: Int32, _ status: ProcessExit = .exited(1)) -> Duration? {
        let actions = harness.exited(pid, status)
        return actions.wake.map { $0 - harness.now }
    }

    @Test func backsOffFrom100MillisecondsDoublingUpTo30Seconds() {
        var timing = Supervisor.Timing()
        timing.maximumFailures = .max
        var harness = H(timing: timing)
        var pid = harness.startAll([H.plugin("a")])["a"]!
        var delays: [Duration] = []
        for _ in 0..<11 {
            guard let delay = crash(&harness, pid) else {
                Issue.record("no restart was scheduled")
                return
            }
            delays.append(delay)
            #expect(harness.fireTimer(at: harness.now + delay).spawns == ["a"])
            pid = harness.spawned("a")
        }
        let expected: [Duration] = [100, 200, 400, 800, 1600, 3200, 6400, 12800, 25600, 30000, 30000].map {
            .milliseconds($0)
        }
        #expect(delays == expected)
        #expect(harness.supervisor.status(of: "a")?.restarts == 11)
    }

    @Test(arguments: [(Duration.seconds(60), Duration.milliseconds(100)), (.milliseconds(59_999), .milliseconds(400))])
    func resetsTheDelayOnceThePluginHasRunFor60Seconds(ran: Duration, nextDelay: Duration) {
        var harness = H()
        var pid = harness.startAll([H.plugin("a")])["a"]!
        for expected in [Duration.milliseconds(100), .milliseconds(200)] {
            let delay = crash(&harness, pid)
            #expect(delay == expected)
            _ = harness.fireTimer(at: harness.now + expected)
            pid = harness.spawned("a")
        }
        harness.advance(by: ran)
        #expect(crash(&harness, pid) == nextDelay)
    }

    @Test func fiveFailuresWithin60SecondsMakeThePluginFailedWithNoMoreSpawns() {
        var harness = H()
        var pid = harness.startAll([H.plugin("a")])["a"]!
        for _ in 0..<4 {
            let actions = harness.exited(pid, .exited(1))
            #expect(actions.published["a"]?.state == .starting)
            #expect(harness.fireTimer(at: actions.wake!).spawns == ["a"])
            pid = harness.spawned("a")
        }
        let fifth = harness.exited(pid, .killed(signal: 11))
        #expect(fifth.published["a"]?.state == .failed)
        #expect(fifth.published["a"]?.lastExit == "killed by signal 11 (SIGSEGV)")
        #expect(fifth.wake == nil)
        #expect(
            fifth.logs.last
                == "plugin a: failed 5 times within 60 s; not restarting it until `herald plugins restart a`"
        )
        #expect(harness.supervisor.nextDeadline == nil)
        #expect(harness.fireTimer(at: harness.now + .seconds(120)).spawns.isEmpty)
        #expect(harness.state("a") == .failed)
    }

    @Test func failuresSpreadOverMoreThan60SecondsNeverMakeItFailed() {
        var harness = H()
        var pid = harness.startAll([H.plugin("a")])["a"]!
        for _ in 0..<10 {
            harness.advance(by: .seconds(20))
            let actions = harness.exited(pid, .exited(1))
            guard let wake = actions.wake else {
                Issue.record("no restart after a failure: \(actions)")
                return
            }
            _ = harness.fireTimer(at: wake)
            pid = harness.spawned("a")
        }
        #expect(harness.state("a") == .running)
    }

    @Test func restartRequestClearsFailedAndTheFailureCount() {
        var timing = Supervisor.Timing()
        timing.maximumFailures = 2
        var harness = H(timing: timing)
        var pid = harness.startAll([H.plugin("a")])["a"]!
        _ = harness.fireTimer(at: harness.exited(pid, .exited(1)).wake!)
        pid = harness.spawned("a")
        #expect(harness.exited(pid, .exited(1)).published["a"]?.state == .failed)
        let restart = harness.supervisor.restartRequested("a", now: harness.now)
        #expect(restart.spawns == ["a"])
        #expect(restart.published["a"]?.state == .starting)
        pid = harness.spawned("a")
        let next = harness.exited(pid, .exited(1))
        #expect(next.wake.map { $0 - harness.now } == .milliseconds(100), "the backoff starts again")
        #expect(harness.state("a") == .starting, "one failure since the restart is not two")
    }

    @Test func aFailedSpawnCountsAsAFailure() {
        var harness = H()
        _ = harness.load([H.plugin("a")])
        _ = harness.supervisor.daemonStarted(now: harness.now)
        let failed = harness.supervisor.spawnFailed("a", reason: "/usr/bin/true: No such file", now: harness.now)
        #expect(failed.published["a"]?.lastExit == "spawn failed: /usr/bin/true: No such file")
        #expect(failed.wake.map { $0 - harness.now } == .milliseconds(100))
    }

    @Test func restartAlwaysRestartsAfterACleanExitWithoutEverFailing() {
        var harness = H()
        var pid = harness.startAll([H.plugin("a", restart: .always)])["a"]!
        var delays: [Duration] = []
        for _ in 0..<8 {
            let actions = harness.exited(pid, .exited(0))
            guard let wake = actions.wake else {
                Issue.record("no restart after a clean exit")
                return
            }
            delays.append(wake - harness.now)
            _ = harness.fireTimer(at: wake)
            pid = harness.spawned("a")
        }
        #expect(delays.first == .milliseconds(100))
        #expect(delays.last == .milliseconds(12_800))
        #expect(harness.state("a") == .running)
    }

    @Test(arguments: [
        (RestartPolicy.onFailure, ProcessExit.exited(0), PluginStatus.State.stopped),
        (.no, .exited(0), .stopped),
        (.no, .exited(3), .failed),
        (.no, .killed(signal: 9), .failed),
    ])
    func aPluginThatIsNotRestartedEndsStoppedOrFailed(
        policy: RestartPolicy,
        status: ProcessExit,
        state: PluginStatus.State
    ) {
        var harness = H()
        let pid = harness.startAll([H.plugin("a", restart: policy)])["a"]!
        let actions = harness.exited(pid, status)
        #expect(actions.published["a"]?.state == state)
        #expect(actions.wake == nil)
        #expect(actions.spawns.isEmpty)
    }

    @Test func theExitOfAPidThatIsNoPluginIsOnlyLogged() {
        var harness = H()
        _ = harness.startAll([H.plugin("a")])
        let actions = harness.exited(99_999, .exited(0))
        #expect(actions == [.log(.debug, "pid 99999 exited 0, not a plugin")])
    }
}
