import Foundation
import HeraldLaunch
import HeraldTestSupport
import Testing

/// heraldd supervising real plugin processes (issue 17, "How it is checked"): activation on a subscription, restart
/// after a crash, `failed` after a crash loop, the restart policies, what a plugin is started with, and the CLI's
/// start, stop and restart. The plugins are small `/bin/sh` scripts that record their pids in files.
@Suite(.serialized)
struct PluginTests {
    @Test func subscribeActivatedPluginStartsOnTheFirstMatchingSubscriptionAndItsRetainedPostReachesIt() async throws {
        let bed = try PluginBed()
        // It waits a second before posting, so the subscription that started it is live (acknowledged) well before
        // the post: the observer must get the value as a live post, not as a retained value replayed later.
        let script = try bed.script(
            "demo",
            """
            echo $$ >> $OUT/demo.starts
            sleep 1
            "$HERALD" post --retain demo.value answer=42 || exit 1
            echo posted
            exec sleep 1000
            """
        )
        try bed.plugin(
            "demo",
            exec: script,
            ["Provides=demo.*", "Activation=subscribe", "Environment=HERALD=\(TestBinaries.path("herald"))"]
        )
        let daemon = try await bed.startDaemon()
        let watcher = try await PluginWatcher.start(daemon)
        try await watcher.waitFor("demo", "inactive") { $0.state == "inactive" }

        // `herald names` says who provides demo.* before anything was posted there.
        let names = try await run("herald", ["names"], environment: daemon.environment)
        #expect(names.stdoutLines.contains("demo.*\tprovided by plugin demo"), "\(names.stdout)")

        // Subscriptions that cannot match demo.* start nothing: not the watcher's herald.plugin.*, not these.
        let other = try ChildProcess(
            TestBinaries.path("herald"),
            ["observe", "other.*", "demo.value.more", "dem.*", "--ready"],
            environment: daemon.environment
        )
        try await other.waitForStderrLine(containing: "ready")
        let post = try await run("herald", ["post", "other.thing"], environment: daemon.environment)
        #expect(post.status == 0)
        // The daemon spawns in the turn it handles the SUBSCRIBE, so a later request sees any start.
        let before = try await PluginProbe.list(daemon)
        #expect(before["demo"]?.state == "inactive", "\(before)")
        #expect(before["demo"]?.pid == nil)
        #expect(bed.pids(in: "demo.starts").isEmpty)
        #expect(watcher.states(of: "demo").allSatisfy { $0.state == "inactive" }, "\(watcher.states(of: "demo"))")

        // The first matching subscription: acknowledged at once, and the plugin's post reaches it.
        let clock = ContinuousClock()
        let subscribed = clock.now
        let observer = try ChildProcess(
            TestBinaries.path("herald"),
            ["observe", "demo.*", "--json", "--count", "1", "--ready"],
            environment: daemon.environment
        )
        try await observer.waitForStderrLine(containing: "ready")
        let readyAfter = clock.now - subscribed
        #expect(try await observer.waitForExit(timeout: .seconds(30)) == 0, "\(observer.stderr)")
        let line = try #require(observer.stdoutLines.first)
        #expect(line.contains(#""name":"demo.value""#), "\(line)")
        #expect(line.contains(#""answer":"42""#), "\(line)")
        #expect(line.contains(#""retained":false"#), "\(line)")
        print("subscribe-activation: the activating SUBSCRIBE was acknowledged after \(readyAfter)")

        let running = try await watcher.waitFor("demo", "running") { $0.state == "running" }
        let starts = bed.pids(in: "demo.starts")
        #expect(starts.count == 1)
        #expect(running.pid == starts.first)
        #expect(running.provides == ["demo.*"])
        #expect(running.activation == "subscribe")
        // The value is retained: a later reader gets it.
        let get = try await run("herald", ["get", "demo.value"], environment: daemon.environment)
        #expect(get.stdout.contains(#""answer":"42""#), "\(get.stdout)")
        // Its output went to the daemon's log under its name.
        try await daemon.process.waitForStderrLine(containing: "plugin demo: posted")
        // A second matching subscription starts nothing more.
        let again = try await run(
            "herald",
            ["observe", "demo.*", "--count", "1"],
            environment: daemon.environment
        )
        #expect(again.status == 0)
        // The script records its start right after exec: wait for the line, not for the state alone.
        #expect(try await eventually { bed.pids(in: "demo.starts").count == 1 })
        other.signal(SIGTERM)
    }

    @Test func pluginKilledWithSIGKILLIsRestartedAndItsStatesShowIt() async throws {
        let bed = try PluginBed()
        let script = try bed.script("victim", "echo $$ >> $OUT/victim.starts\nexec sleep 1000")
        try bed.plugin("victim", exec: script, ["Activation=start"])
        let daemon = try await bed.startDaemon()
        let watcher = try await PluginWatcher.start(daemon)
        let first = try await watcher.waitFor("victim", "running") { $0.state == "running" }
        let firstPID = try #require(first.pid)
        // The script records its start right after exec: wait for the line, not for the state alone.
        #expect(try await eventually { bed.pids(in: "victim.starts") == [firstPID] })
        let seen = watcher.states(of: "victim").count

        #expect(kill(firstPID, SIGKILL) == 0)
        let second = try await watcher.waitFor("victim", "running again") { $0.state == "running" && $0.restarts == 1 }
        let secondPID = try #require(second.pid)
        #expect(secondPID != firstPID)
        // The script records its start right after exec: wait for the line, not for the state alone.
        #expect(try await eventually { bed.pids(in: "victim.starts") == [firstPID, secondPID] })
        #expect(PluginProbe.isGone(firstPID))
        #expect(PluginProbe.isRunning(secondPID))
        // What the states showed after the kill: starting (why: signal 9, no process), then running with a new pid.
        // (starting is posted twice: once waiting out the backoff, once more as the restart counts.)
        let after = Array(watcher.states(of: "victim").dropFirst(seen))
        let states = after.map(\.state).reduce(into: [String]()) { if $0.last != $1 { $0.append($1) } }
        #expect(states == ["starting", "running"], "\(after)")
        #expect(after.first?.lastExit == "killed by signal 9 (SIGKILL)", "\(after)")
        #expect(after.first?.pid == nil)
        #expect(after.last?.lastExit == "killed by signal 9 (SIGKILL)")
        let listed = try await PluginProbe.list(daemon)
        #expect(listed["victim"]?.pid == secondPID)
        #expect(listed["victim"]?.restarts == 1)
        try await daemon.process.waitForStderrLine(containing: "plugin victim: pid \(firstPID) killed by signal 9")
    }

    @Test func aPluginRunsWithTheDaemonsSocketItsNameItsEnvironmentAndWorkingDirectoryAndStdinFromDevNull()
        async throws
    {
        let bed = try PluginBed()
        let work = bed.directory.file("work dir")
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: false)
        let script = try bed.script(
            "env",
            """
            {
                echo "socket=$HERALD_SOCKET"
                echo "plugin=$HERALD_PLUGIN"
                echo "greeting=$GREETING"
                echo "inherited=$FROM_DAEMON"
                echo "cwd=$(pwd)"
                echo "stdin=$(readlink /proc/$$/fd/0)"
                echo "args=$#:$1:$2"
            } > "$OUT/$HERALD_PLUGIN.env"
            exec sleep 1000
            """
        )
        // A bare program name, looked up in heraldd's PATH, with a quoted argument.
        try bed.plugin(
            "env",
            exec: "sh \(script) \"two words\" 'and more'",
            [
                "Activation=start", "Environment=GREETING=hello there", "Environment=GREETING=hi",
                "WorkingDirectory=\(work)",
            ]
        )
        let daemon = try await bed.startDaemon(environment: [
            "FROM_DAEMON": "yes", "HERALD_SOCKET": "/nonexistent", "HERALD_PLUGIN": "wrong",
        ])
        let watcher = try await PluginWatcher.start(daemon)
        try await watcher.waitFor("env", "running") { $0.state == "running" }
        #expect(try await eventually { bed.lines(of: "env.env").count == 7 })
        #expect(
            bed.lines(of: "env.env") == [
                "socket=\(daemon.socketPath)", "plugin=env", "greeting=hi", "inherited=yes", "cwd=\(work)",
                "stdin=/dev/null", "args=2:two words:and more",
            ]
        )
    }

    @Test(arguments: [("on-failure", 0, "stopped"), ("no", 1, "failed"), ("no", 0, "stopped")])
    func aPluginThatExitsIsLeftAsItsRestartPolicySays(restart: String, code: Int, state: String) async throws {
        let bed = try PluginBed()
        let script = try bed.script("once", "echo $$ >> $OUT/once.starts\nexit \(code)")
        try bed.plugin("once", exec: script, ["Activation=start", "Restart=\(restart)"])
        let daemon = try await bed.startDaemon()
        let watcher = try await PluginWatcher.start(daemon)
        let ended = try await watcher.waitForLatest("once", state) { $0.state == state }
        #expect(ended.lastExit == "exited \(code)")
        #expect(ended.restarts == 0)
        // Not started again: no second start within 1 s, ten times the first restart delay.
        let again = try await eventually(timeout: .seconds(1)) { bed.pids(in: "once.starts").count > 1 }
        #expect(!again)
        // The script records its start right after exec: wait for the line, not for the state alone.
        #expect(try await eventually { bed.pids(in: "once.starts").count == 1 })
        #expect(try await PluginProbe.list(daemon)["once"]?.state == state)
    }

    @Test func aPluginWithRestartAlwaysIsRestartedAfterCleanExitsAndNeverFails() async throws {
        let bed = try PluginBed()
        let script = try bed.script("again", "echo $$ >> $OUT/again.starts\nexit 0")
        try bed.plugin("again", exec: script, ["Activation=start", "Restart=always"])
        let daemon = try await bed.startDaemon()
        let watcher = try await PluginWatcher.start(daemon)
        // Six starts take 100 + 200 + 400 + 800 + 1600 ms of backoff: past the five that fail a failing plugin.
        #expect(try await eventually(timeout: .seconds(20)) { bed.pids(in: "again.starts").count >= 6 })
        try await watcher.waitFor("again", "restarted 5 times") { $0.restarts >= 5 }
        let states = watcher.states(of: "again")
        #expect(!states.contains { $0.state == "failed" }, "\(states)")
        #expect(states.contains { $0.lastExit == "exited 0" })
        // Stopping it ends the restarts.
        #expect(try await PluginProbe.command(daemon, ["stop", "again"]).status == 0)
        try await watcher.waitForLatest("again", "stopped") { $0.state == "stopped" }
        let count = bed.pids(in: "again.starts").count
        let more = try await eventually(timeout: .seconds(4)) { bed.pids(in: "again.starts").count > count }
        #expect(!more)
    }

    @Test func theDaemonKnowsAPluginsConnectionByItsKernelPid() async throws {
        let bed = try PluginBed()
        // exec keeps the pid: the connection comes from the very process heraldd started.
        let script = try bed.script("direct", "exec \"$HERALD\" observe direct.nothing")
        try bed.plugin(
            "direct",
            exec: script,
            ["Activation=start", "Environment=HERALD=\(TestBinaries.path("herald"))"]
        )
        let daemon = try await bed.startDaemon()
        let watcher = try await PluginWatcher.start(daemon)
        let running = try await watcher.waitFor("direct", "running") { $0.state == "running" }
        let pid = try #require(running.pid)
        try await daemon.process.waitForStderrLine(containing: "is plugin direct (pid \(pid))")
        // Other clients are not taken for it.
        #expect(daemon.process.stderrLines.filter { $0.contains(" is plugin ") }.count == 1)
    }

    @Test func pluginThatAlwaysExits1FailsAfterFiveTriesAndStaysStoppedCheaply() async throws {
        let bed = try PluginBed()
        let script = try bed.script("crash", "echo $$ >> $OUT/crash.starts\necho crashing\nexit 1")
        try bed.plugin("crash", exec: script, ["Activation=manual"])
        let daemon = try await bed.startDaemon()
        let watcher = try await PluginWatcher.start(daemon)
        try await watcher.waitFor("crash", "inactive") { $0.state == "inactive" }

        let descriptorsBefore = try DaemonProbe.descriptorCount(of: daemon.pid)
        let cpuBefore = try DaemonProbe.cpuSeconds(of: daemon.pid)
        let preciseBefore = try DaemonProbe.cpuSecondsPrecisely(of: daemon.pid)
        let clock = ContinuousClock()
        let began = clock.now
        #expect(try await PluginProbe.command(daemon, ["start", "crash"]).status == 0)
        // 100 + 200 + 400 + 800 ms of backoff between the five tries: well within the minute.
        let failed = try await watcher.waitFor("crash", "failed", timeout: .seconds(30)) { $0.state == "failed" }
        let toFailed = clock.now - began
        #expect(failed.restarts == 4)
        #expect(failed.lastExit == "exited 1")
        #expect(failed.pid == nil)
        #expect(bed.pids(in: "crash.starts").count == 5)
        // Stays stopped: no sixth start within 2 s, longer than the next backoff (1.6 s) would have been.
        let sixth = try await eventually(timeout: .seconds(2)) { bed.pids(in: "crash.starts").count > 5 }
        #expect(!sixth, "\(bed.lines(of: "crash.starts"))")
        let cpu = try DaemonProbe.cpuSeconds(of: daemon.pid) - cpuBefore
        let precise = try DaemonProbe.cpuSecondsPrecisely(of: daemon.pid) - preciseBefore
        print(
            "crash loop: failed after 5 starts in \(toFailed); heraldd used \(Int(precise * 1e6)) µs of CPU "
                + "(utime+stime \(cpu) s) over the episode (\(clock.now - began) including the 2 s watch after failed)"
        )
        #expect(cpu < 1.0, "heraldd used \(cpu) s of CPU while its plugin crash-looped")
        // Five children started and gone leave no descriptor behind (their output pipes are closed).
        var descriptors = 0
        let settled = try await eventually {
            descriptors = try DaemonProbe.descriptorCount(of: daemon.pid)
            return descriptors == descriptorsBefore
        }
        #expect(settled, "heraldd held \(descriptorsBefore) descriptors before the crash loop, \(descriptors) after")
        #expect(watcher.states(of: "crash").last?.state == "failed")
        try await daemon.process.waitForStderrLine(containing: "plugin crash: failed 5 times within 60 s")
        try await daemon.process.waitForStderrLine(containing: "plugin crash: crashing")

        // `herald plugins restart` clears failed: five fresh tries, then failed again.
        let failedStates = watcher.states(of: "crash").count
        #expect(try await PluginProbe.command(daemon, ["restart", "crash"]).status == 0)
        try await watcher.process.wait(for: "crash failed again", timeout: .seconds(30)) { stdout, _ in
            stdout.compactMap(PluginState.parse(observed:)).filter { $0.name == "crash" }.dropFirst(failedStates)
                .contains { $0.state == "failed" }
        }
        #expect(bed.pids(in: "crash.starts").count == 10)
    }

    @Test func startStopAndRestartActOnAKnownPluginAndAnUnknownOneIsAnError() async throws {
        let bed = try PluginBed()
        let script = try bed.script("handy", "echo $$ >> $OUT/handy.starts\nexec sleep 1000")
        try bed.plugin("handy", exec: script, ["Activation=manual", "Description=started by hand"])
        let daemon = try await bed.startDaemon()
        let watcher = try await PluginWatcher.start(daemon)
        try await watcher.waitFor("handy", "inactive") { $0.state == "inactive" }
        #expect(bed.pids(in: "handy.starts").isEmpty)

        #expect(try await PluginProbe.command(daemon, ["start", "handy"]).status == 0)
        let started = try await watcher.waitForLatest("handy", "running") { $0.state == "running" }
        let firstPID = try #require(started.pid)
        // The script records its start right after exec: wait for the line, not for the state alone.
        #expect(try await eventually { bed.pids(in: "handy.starts") == [firstPID] })
        // Starting a running plugin changes nothing.
        #expect(try await PluginProbe.command(daemon, ["start", "handy"]).status == 0)
        #expect(try await PluginProbe.list(daemon)["handy"]?.pid == firstPID)

        #expect(try await PluginProbe.command(daemon, ["stop", "handy"]).status == 0)
        let stopped = try await watcher.waitForLatest("handy", "stopped") { $0.state == "stopped" }
        #expect(stopped.lastExit == "killed by signal 15 (SIGTERM)")
        #expect(stopped.restarts == 0)
        #expect(try await eventually { PluginProbe.isGone(firstPID) })

        #expect(try await PluginProbe.command(daemon, ["restart", "handy"]).status == 0)
        let restarted = try await watcher.waitForLatest("handy", "running again") { $0.state == "running" }
        let secondPID = try #require(restarted.pid)
        #expect(secondPID != firstPID)
        // Restarting a running plugin stops it and starts a new process.
        #expect(try await PluginProbe.command(daemon, ["restart", "handy"]).status == 0)
        let third = try await watcher.waitForLatest("handy", "running a third time") {
            $0.state == "running" && $0.pid != secondPID
        }
        #expect(try await eventually { PluginProbe.isGone(secondPID) })
        let thirdPID = try #require(third.pid)
        // The script records its start right after exec: wait for the line, not for the state alone.
        #expect(try await eventually { bed.pids(in: "handy.starts") == [firstPID, secondPID, thirdPID] })
        // Starts people asked for are not restarts.
        #expect(third.restarts == 0)

        for action in ["start", "stop", "restart"] {
            let unknown = try await PluginProbe.command(daemon, [action, "nope"])
            #expect(unknown.status == 1)
            #expect(unknown.stderr.contains("UNKNOWN_PLUGIN"), "\(unknown.stderr)")
            #expect(unknown.stderr.contains("no plugin called nope"), "\(unknown.stderr)")
        }
        let usage = try await PluginProbe.command(daemon, ["start"])
        #expect(usage.status == 64)
    }
}
