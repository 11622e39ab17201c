import HeraldPlugins
import HeraldWire
import Testing

/// Thousands of plugins (issue 27): starts are spread over the owner's turns, an event's work is for the plugins it
/// names, and a start that can never work fails at once.
struct SupervisorScaleTests {
    typealias H = SupervisorHarness

    @Test func startsAreSpreadOverTurnsAndEveryPluginStartsOnce() {
        var harness = H()
        let names = (0..<2000).map { "p\($0)" }
        _ = harness.load(names.map { H.plugin($0) })
        var actions = harness.supervisor.daemonStarted(now: harness.now)
        var started: [String] = []
        var turns = 0
        while true {
            #expect(actions.spawns.count <= harness.supervisor.timing.spawnsPerTurn)
            for name in actions.spawns {
                _ = harness.spawned(name)
                started.append(name)
            }
            guard actions.contains(.continueStarting) else { break }
            turns += 1
            actions = harness.supervisor.startQueued(now: harness.now)
        }
        #expect(Set(started) == Set(names))
        #expect(started.count == names.count)
        #expect(turns == 2000 / harness.supervisor.timing.spawnsPerTurn - 1)
        // Queued plugins show as starting, like any plugin about to start.
        #expect(harness.supervisor.statuses.values.allSatisfy { $0.state == .running })
    }

    /// Restarts that fall due together (a crash of every plugin at once) come out a turn's share at a time too.
    @Test func restartsDueTogetherAreSpreadOverTurnsToo() throws {
        var harness = H()
        let names = (0..<48).map { "p\($0)" }
        var pids: [String: Int32] = [:]
        _ = harness.load(names.map { H.plugin($0) })
        var actions = harness.supervisor.daemonStarted(now: harness.now)
        while true {
            for name in actions.spawns { pids[name] = harness.spawned(name) }
            guard actions.contains(.continueStarting) else { break }
            actions = harness.supervisor.startQueued(now: harness.now)
        }
        var wake: Instant?
        for name in names { wake = harness.exited(pids[name]!, .exited(1)).wake ?? wake }
        let due = harness.fireTimer(at: try #require(wake))
        #expect(due.spawns.count == harness.supervisor.timing.spawnsPerTurn)
        #expect(due.contains(.continueStarting))
        var spawned = due.spawns.count
        for name in due.spawns { _ = harness.spawned(name) }
        var turns = 0
        while spawned < names.count && turns <= names.count {
            let next = harness.supervisor.startQueued(now: harness.now)
            #expect(next.spawns.count <= harness.supervisor.timing.spawnsPerTurn)
            for name in next.spawns { _ = harness.spawned(name) }
            spawned += next.spawns.count
            turns += 1
        }
        #expect(spawned == names.count)
    }

    /// A reload that changes every file stops the running plugins a turn's share at a time; each is restarted
    /// with its new file.
    @Test func aReloadOfEveryFileStopsRunningPluginsATurnsShareAtATime() {
        var harness = H()
        let names = (0..<40).map { "p\($0)" }
        var pids: [String: Int32] = [:]
        _ = harness.load(names.map { H.plugin($0) })
        var actions = harness.supervisor.daemonStarted(now: harness.now)
        while true {
            for name in actions.spawns { pids[name] = harness.spawned(name) }
            guard actions.contains(.continueStarting) else { break }
            actions = harness.supervisor.startQueued(now: harness.now)
        }
        let changed = names.map { H.plugin($0, command: ["/usr/bin/false"]) }
        actions = harness.supervisor.loaded(changed, refused: [], now: harness.now)
        var signalled = 0
        var restarted: Set<String> = []
        var turns = 0
        while true {
            let terminated = actions.signals.filter { $0.hasPrefix("terminate") }
            #expect(terminated.count <= harness.supervisor.timing.spawnsPerTurn)
            signalled += terminated.count
            for name in names where actions.signals.contains("terminate \(pids[name]!)") {
                let exit = harness.exited(pids[name]!, .killed(signal: 15))
                for started in exit.spawns {
                    pids[started] = harness.spawned(started)
                    restarted.insert(started)
                }
            }
            guard actions.contains(.continueStarting) || turns == 0 else { break }
            turns += 1
            actions = harness.supervisor.startQueued(now: harness.now)
            if turns > 100 { break }
        }
        #expect(signalled == names.count)
        #expect(turns >= names.count / harness.supervisor.timing.spawnsPerTurn - 1)
        #expect(harness.supervisor.statuses.values.allSatisfy { $0.state == .running || $0.state == .starting })
    }

    /// With thousands of subscribe plugins never run, a subscription looks at those it could start (filed under
    /// its first segment, and those providing under a wildcard), and starts exactly the ones it overlaps.
    @Test func aSubscriptionStartsExactlyThePluginsItOverlapsAmongThousands() {
        var harness = H()
        var declarations = (0..<2000).map { H.plugin("p\($0)", .subscribe, provides: ["p\($0).*"]) }
        declarations.append(H.plugin("wild", .subscribe, provides: ["*.status"]))
        declarations.append(H.plugin("all", .subscribe, provides: ["**"]))
        _ = harness.load(declarations)
        _ = harness.supervisor.daemonStarted(now: harness.now)
        #expect(harness.supervisor.subscribed(try! Pattern("p7.x"), now: harness.now).spawns == ["all", "p7"])
        #expect(harness.supervisor.subscribed(try! Pattern("q.status"), now: harness.now).spawns == ["wild"])
        #expect(harness.supervisor.subscribed(try! Pattern("p7.y"), now: harness.now).spawns.isEmpty)
        // A pattern that begins with a wildcard can overlap them all: every other one starts (a turn's share now,
        // the rest queued as starting).
        let everything = harness.supervisor.subscribed(try! Pattern("*.x"), now: harness.now)
        #expect(everything.spawns.count == harness.supervisor.timing.spawnsPerTurn)
        #expect(everything.published.values.filter { $0.state == .starting }.count == 1999)
        #expect(harness.supervisor.awaitsSubscriptions == false)
    }

    @Test func aQueuedPluginCanBeStoppedAndShutdownStopsTheQueue() {
        var harness = H()
        let names = (0..<40).map { "p\($0)" }
        _ = harness.load(names.map { H.plugin($0) })
        let first = harness.supervisor.daemonStarted(now: harness.now)
        #expect(first.spawns.count == harness.supervisor.timing.spawnsPerTurn)
        #expect(first.published["p39"]?.state == .starting)
        for name in first.spawns { _ = harness.spawned(name) }
        let stop = harness.supervisor.stopRequested("p39", now: harness.now)
        #expect(stop.published["p39"]?.state == .stopped)
        _ = harness.supervisor.shutdownBegan(now: harness.now)
        let after = harness.supervisor.startQueued(now: harness.now)
        #expect(after.spawns.isEmpty, "nothing starts after shutdown began")
        #expect(harness.state("p30") == .stopped)
    }

    /// One plugin's exit among thousands publishes that plugin only and asks for no other work: the end of an
    /// event looks at what it touched (it sorted and compared every plugin before).
    @Test func anEventAmongThousandsOfPluginsActsOnlyOnItsPlugin() {
        var harness = H()
        var timing = Supervisor.Timing()
        timing.spawnsPerTurn = 5000
        harness = H(timing: timing)
        let pids = harness.startAll((0..<3000).map { H.plugin("p\($0)") })
        let actions = harness.exited(pids["p1234"]!, .exited(1))
        #expect(Set(actions.published.keys) == ["p1234"])
        #expect(actions.published["p1234"]?.state == .starting)
        #expect(actions.wake.map { $0 - harness.now } == .milliseconds(100))
    }

    @Test func aStartThatCanNeverWorkFailsAtOnceWithItsReason() {
        var harness = H()
        _ = harness.load([H.plugin("a")])
        _ = harness.supervisor.daemonStarted(now: harness.now)
        let reason = "cannot change to its WorkingDirectory=/nowhere: No such file or directory (errno 2)"
        let failed = harness.supervisor.spawnFailed("a", reason: reason, permanent: true, now: harness.now)
        #expect(failed.published["a"]?.state == .failed)
        #expect(failed.published["a"]?.lastExit == "spawn failed: \(reason)")
        #expect(failed.wake == nil, "no retry of what cannot work")
        // A request still starts it afresh, as from any failure.
        #expect(harness.supervisor.restartRequested("a", now: harness.now).spawns == ["a"])
    }
}
