import HeraldPlugins
import Testing

struct SupervisorReloadTests {
    private typealias H = SupervisorHarness

    @Test func reloadStartsAddedStopsRemovedAndRestartsChangedPlugins() {
        var harness = H()
        let pids = harness.startAll([H.plugin("same"), H.plugin("changed"), H.plugin("removed")])
        let reload = harness.load([
            H.plugin("same"), H.plugin("changed", command: ["/usr/bin/new"]), H.plugin("added"),
        ])
        #expect(reload.spawns == ["added"])
        #expect(reload.signals == ["terminate \(pids["removed"]!)", "terminate \(pids["changed"]!)"])
        #expect(!reload.publications.contains { $0.hasPrefix("same ") }, "an unchanged plugin is left alone")
        let changedExit = harness.exited(pids["changed"]!, .exited(0))
        guard case .spawn(let declaration)? = changedExit.first(where: { if case .spawn = $0 { true } else { false } })
        else {
            Issue.record("the changed plugin was not started again")
            return
        }
        #expect(declaration.command == ["/usr/bin/new"])
        let removedExit = harness.exited(pids["removed"]!, .exited(0))
        #expect(removedExit.unpublished == ["removed"])
        #expect(harness.supervisor.status(of: "removed") == nil)
        #expect(harness.supervisor.statuses.keys.sorted() == ["added", "changed", "same"])
    }

    @Test func reloadForgetsAStoppedPluginWhoseFileIsGoneAtOnce() {
        var harness = H()
        _ = harness.load([H.plugin("m", .manual)])
        let reload = harness.load([])
        #expect(reload.unpublished == ["m"])
        #expect(reload.signals.isEmpty)
    }

    @Test func reloadRetriesAFailedPluginWhoseFileChanged() {
        var timing = Supervisor.Timing()
        timing.maximumFailures = 1
        var harness = H(timing: timing)
        let pid = harness.startAll([H.plugin("a")])["a"]!
        #expect(harness.exited(pid, .exited(1)).published["a"]?.state == .failed)
        #expect(harness.load([H.plugin("a")]).spawns.isEmpty, "the same file does not retry")
        #expect(harness.load([H.plugin("a", command: ["/usr/bin/fixed"])]).spawns == ["a"])
    }

    @Test func aNewlyRefusedFileStopsItsPluginAndShowsTheReasonOnce() {
        var harness = H()
        let pid = harness.startAll([H.plugin("a")])["a"]!
        let refusal = PluginCatalog.Refusal(name: "a", path: "/u/a.plugin", reason: "line 3: unknown key 'Foo'")
        let reload = harness.load([], refused: [refusal])
        #expect(reload.signals == ["terminate \(pid)"])
        #expect(reload.logs.contains("plugin file /u/a.plugin refused: line 3: unknown key 'Foo'"))
        let exit = harness.exited(pid, .exited(0))
        #expect(exit.published["a"]?.state == .refused)
        #expect(exit.published["a"]?.reason == "line 3: unknown key 'Foo'")
        #expect(harness.load([], refused: [refusal]).isEmpty, "an unchanged refusal is neither logged nor posted again")
        let fixed = harness.load([H.plugin("a")])
        #expect(fixed.spawns == ["a"], "a fixed Activation=start file starts")
    }

    @Test func aRefusedFileAtStartupIsPublishedWithItsReason() {
        var harness = H()
        let refusal = PluginCatalog.Refusal(
            name: "x",
            path: "/u/x.plugin",
            reason: "writable by group or others (mode 0664)"
        )
        let actions = harness.load([H.plugin("good")], refused: [refusal])
        #expect(actions.logs == ["plugin file /u/x.plugin refused: writable by group or others (mode 0664)"])
        #expect(actions.published["x"]?.state == .refused)
        #expect(actions.published["x"]?.activation == nil)
        #expect(harness.supervisor.daemonStarted(now: harness.now).spawns == ["good"])
        #expect(harness.supervisor.startRequested("x", now: harness.now).spawns.isEmpty)
    }

    @Test func aPluginLeavingForARemovedFileIsForgottenWhateverIsAskedMeanwhile() {
        var harness = H()
        let pid = harness.startAll([H.plugin("a")])["a"]!
        #expect(harness.load([]).signals == ["terminate \(pid)"])
        #expect(
            harness.supervisor.stopRequested("a", now: harness.now).logs == ["cannot stop plugin a: its file is gone"]
        )
        #expect(harness.supervisor.startRequested("a", now: harness.now).spawns.isEmpty)
        let exit = harness.exited(pid, .exited(0))
        #expect(exit.unpublished == ["a"])
        #expect(exit.spawns.isEmpty)
    }

    @Test func aFileThatComesBackWhileItsPluginIsStoppingStartsItAgain() {
        var harness = H()
        let pid = harness.startAll([H.plugin("a")])["a"]!
        _ = harness.load([])
        _ = harness.load([H.plugin("a", command: ["/usr/bin/back"])])
        let exit = harness.exited(pid, .exited(0))
        #expect(exit.spawns == ["a"])
        #expect(exit.unpublished.isEmpty)
    }
}
