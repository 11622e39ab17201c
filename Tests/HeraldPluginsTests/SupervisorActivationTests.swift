import HeraldPlugins
import HeraldWire
import Testing

struct SupervisorActivationTests {
    private typealias H = SupervisorHarness

    @Test func startsOnlyStartPluginsWhenTheDaemonStarts() {
        var harness = H()
        let loaded = harness.load([
            H.plugin("a", .start), H.plugin("b", .manual), H.plugin("c", .subscribe, provides: ["session.*"]),
        ])
        #expect(loaded.spawns.isEmpty, "nothing starts before the daemon serves")
        #expect(loaded.publications == ["a inactive", "b inactive", "c inactive"])
        let started = harness.supervisor.daemonStarted(now: harness.now)
        #expect(started.spawns == ["a"])
        #expect(started.publications == ["a starting"])
        let pid = harness.spawned("a")
        #expect(harness.supervisor.status(of: "a")?.pid == pid)
        #expect(harness.supervisor.plugin(withPID: pid) == "a")
    }

    @Test(arguments: [
        ("session.*", true), ("session.state", true), ("**", true), ("*.state", true), ("session.**", true),
        ("session", false), ("chat.**", false), ("session.a.b", false), ("*", false),
    ])
    func startsASubscribePluginOnlyForAPatternThatCanMatchWhatItProvides(pattern: String, starts: Bool) throws {
        var harness = H()
        _ = harness.load([H.plugin("hook", .subscribe, provides: ["session.*"]), H.plugin("other", .manual)])
        _ = harness.supervisor.daemonStarted(now: harness.now)
        let actions = harness.supervisor.subscribed(try Pattern(pattern), now: harness.now)
        #expect(actions.spawns == (starts ? ["hook"] : []))
    }

    @Test func subscriptionsActivateAPluginOnlyOnce() throws {
        var harness = H()
        _ = harness.load([H.plugin("hook", .subscribe, provides: ["session.*"])])
        _ = harness.supervisor.daemonStarted(now: harness.now)
        #expect(harness.supervisor.awaitsSubscriptions)
        #expect(harness.supervisor.subscribed(try Pattern("session.*"), now: harness.now).spawns == ["hook"])
        #expect(!harness.supervisor.awaitsSubscriptions)
        let pid = harness.spawned("hook")
        #expect(harness.supervisor.subscribed(try Pattern("session.*"), now: harness.now).spawns.isEmpty)
        _ = harness.exited(pid, .exited(0))
        #expect(harness.state("hook") == .stopped)
        let later = harness.supervisor.subscribed(try Pattern("session.**"), now: harness.now)
        #expect(later.spawns.isEmpty, "a plugin that has run is not activated again by a subscription")
    }

    @Test func aReloadStartsANewSubscribePluginThatALiveSubscriptionWants() throws {
        var harness = H()
        _ = harness.load([])
        _ = harness.supervisor.daemonStarted(now: harness.now)
        let actions = harness.supervisor.loaded(
            [H.plugin("hook", .subscribe, provides: ["session.*"]), H.plugin("late", .start)],
            refused: [],
            subscriptions: [try Pattern("session.state")],
            now: harness.now
        )
        #expect(actions.spawns == ["hook", "late"])
    }

    @Test func startRequestStartsAManualPluginAndIgnoresARunningOne() {
        var harness = H()
        _ = harness.load([H.plugin("m", .manual)])
        _ = harness.supervisor.daemonStarted(now: harness.now)
        #expect(harness.supervisor.startRequested("m", now: harness.now).spawns == ["m"])
        _ = harness.spawned("m")
        let again = harness.supervisor.startRequested("m", now: harness.now)
        #expect(again.spawns.isEmpty)
        #expect(again.logs == ["plugin m: already running"])
        #expect(harness.supervisor.startRequested("nope", now: harness.now).logs == ["no plugin named nope to start"])
    }

    @Test func publishesEachVisibleChangeWithTheTimeTheStateChanged() {
        var harness = H()
        let t0 = harness.now
        #expect(
            harness.load([H.plugin("a")]).published["a"]
                == PluginStatus(
                    state: .inactive,
                    since: t0,
                    file: "/u/a.plugin",
                    activation: .start
                )
        )
        harness.advance(by: .seconds(1))
        let t1 = harness.now
        #expect(harness.supervisor.daemonStarted(now: t1).published["a"]?.since == t1)
        harness.advance(by: .milliseconds(5))
        let pid = harness.spawned("a")
        harness.advance(by: .seconds(10))
        let crashed = harness.exited(pid, .killed(signal: 9))
        #expect(
            crashed.published["a"]
                == PluginStatus(
                    state: .starting,
                    restarts: 0,
                    lastExit: "killed by signal 9 (SIGKILL)",
                    since: harness.now,
                    file: "/u/a.plugin",
                    activation: .start
                )
        )
        let crashTime = harness.now
        let restarted = harness.fireTimer(at: crashed.wake!)
        #expect(restarted.spawns == ["a"])
        #expect(restarted.published["a"]?.restarts == 1, "a new restart count is a visible change")
        #expect(restarted.published["a"]?.since == crashTime, "still starting: since is unchanged")
        #expect(harness.supervisor.timerFired(now: harness.now).published.isEmpty, "nothing changed, nothing posted")
    }

    @Test func encodesTheStatusAsTheRetainedJSONPayload() throws {
        let status = PluginStatus(
            state: .running,
            pid: 4242,
            restarts: 2,
            lastExit: "exited 1",
            since: Instant(nanoseconds: 5),
            file: "/home/a/.config/herald/plugins/session.plugin",
            provides: ["session.*"],
            activation: .start
        )
        #expect(
            status.json(since: "2026-11-25T09:00:00Z")
                == #"{"state":"running","pid":4242,"restarts":2,"lastExit":"exited 1","since":"2026-11-25T09:00:00Z","#
                + #""file":"/home/a/.config/herald/plugins/session.plugin","provides":["session.*"],"#
                + #""activation":"start","reason":null}"#
        )
        let refused = PluginStatus(
            state: .refused,
            since: Instant(nanoseconds: 5),
            file: "/u/x.plugin",
            reason: "line 2: unknown key \"Q\"\n"
        )
        #expect(
            refused.json(since: "T")
                == #"{"state":"refused","pid":null,"restarts":0,"lastExit":null,"since":"T","file":"/u/x.plugin","#
                + #""provides":[],"activation":null,"reason":"line 2: unknown key \"Q\"\n"}"#
        )
    }
}
