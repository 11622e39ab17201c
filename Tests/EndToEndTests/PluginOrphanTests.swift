import Foundation
import HeraldLaunch
import HeraldTestSupport
import Testing

/// No descendant outlives its plugin (issue 27): a plugin with 200 children, and one that `setsid`s a helper on
/// every start (so it leaves its process group and session) with `Restart=always`. After `herald plugins stop`,
/// after SIGTERM of heraldd, and after SIGKILL of heraldd followed by a new heraldd on the same socket, none of
/// their processes is left.
@Suite(.serialized)
struct PluginOrphanTests {
    @Test(.requires("setsid", "seq"), arguments: ["herald plugins stop", "SIGTERM", "SIGKILL and a new heraldd"])
    func noChildOrSetsidHelperOfAPluginOutlivesIt(ending: String) async throws {
        let bed = try PluginBed()
        let many = try bed.script(
            "many",
            """
            for i in $(seq 200); do sleep 1000 & echo $! >> $OUT/many.children; done
            wait
            """
        )
        try bed.plugin("many", exec: many, ["Activation=start"])
        let escaper = try bed.script(
            "escaper",
            """
            setsid sh -c 'echo $$ >> '$OUT'/escaper.helpers; exec sleep 1000' &
            sleep 0.2
            exit 0
            """
        )
        try bed.plugin("escaper", exec: escaper, ["Activation=start", "Restart=always"])
        let daemon = try await bed.startDaemon()
        let watcher = try await PluginWatcher.start(daemon)
        try await watcher.waitFor("many", "running") { $0.state == "running" }
        #expect(try await eventually(timeout: .seconds(30)) { bed.pids(in: "many.children").count == 200 })
        #expect(try await eventually(timeout: .seconds(30)) { bed.pids(in: "escaper.helpers").count >= 3 })
        // Each earlier helper went when the start that made it exited: a restart loop leaves no trail.
        let helpers = bed.pids(in: "escaper.helpers")
        #expect(
            try await eventually(timeout: .seconds(10)) { helpers.dropLast().allSatisfy(PluginProbe.isGone) },
            "helpers of earlier starts still running: \(helpers.dropLast().filter(PluginProbe.isRunning))"
        )

        switch ending {
        case "herald plugins stop":
            #expect(try await PluginProbe.command(daemon, ["stop", "many"]).status == 0)
            #expect(try await PluginProbe.command(daemon, ["stop", "escaper"]).status == 0)
            try await watcher.waitForLatest("many", "stopped") { $0.state == "stopped" }
            try await watcher.waitForLatest("escaper", "stopped") { $0.state == "stopped" }
        case "SIGTERM":
            daemon.process.signal(SIGTERM)
            #expect(try await daemon.process.waitForExit(timeout: .seconds(10)) == 0)
        default:
            daemon.process.signal(SIGKILL)
            #expect(try await daemon.process.waitForExit(timeout: .seconds(10)) == SIGKILL)
            // The next heraldd on the socket, with no plugin files left, ends what the last one left.
            try FileManager.default.removeItem(atPath: bed.userFolder + "/many.plugin")
            try FileManager.default.removeItem(atPath: bed.userFolder + "/escaper.plugin")
            let next = try await bed.startDaemon()
            try await next.process.wait(for: "leftovers ended", timeout: .seconds(10)) { _, stderr in
                stderr.contains { $0.contains("left by the last heraldd on this socket") }
            }
        }
        let all = bed.pids(in: "many.children") + bed.pids(in: "escaper.helpers")
        let gone = try await eventually(timeout: .seconds(10)) { all.allSatisfy(PluginProbe.isGone) }
        let left = all.filter(PluginProbe.isRunning)
        #expect(gone, "\(left.count) of \(all.count) processes left after \(ending): \(left.prefix(10))")
        for pid in left { kill(pid, SIGKILL) }
    }
}
