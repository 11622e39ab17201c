import Foundation
import HeraldBroker
import HeraldLaunch
import HeraldTestSupport
import Testing

/// The record of what heraldd's plugins run, for the next heraldd after a SIGKILL (issues 27 and 31): in the state
/// log when heraldd keeps one, in `SOCKET.plugins` under `--no-state`. The process it must end here carries no
/// `HERALD_*` environment (`env -i`), so only the record (its plugin's process group) finds it.
@Suite(.serialized)
struct PluginRecordTests {
    @Test(.requires("env", "sleep"), arguments: [true, false])
    func theNextHeralddEndsWhatTheRecordNamesAfterASIGKILL(keepsState: Bool) async throws {
        let bed = try PluginBed()
        let scrubbed = try bed.script(
            "scrubbed",
            """
            env -i /bin/sh -c 'echo $$ >> '$OUT'/scrubbed.children; exec sleep 1000' &
            wait
            """
        )
        try bed.plugin("scrubbed", exec: scrubbed, ["Activation=start"])
        let arguments = keepsState ? [] : ["--no-state"]
        let daemon = try await bed.startDaemon(arguments: arguments)
        #expect(try await eventually(timeout: .seconds(30)) { bed.pids(in: "scrubbed.children").count == 1 })
        guard let child = bed.pids(in: "scrubbed.children").first else { return }
        let environment = (try? String(contentsOfFile: "/proc/\(child)/environ", encoding: .utf8)) ?? ""
        #expect(!environment.contains("HERALD_"), "the child carries Herald's environment: \(environment)")

        let recordFile = daemon.socketPath + ".plugins"
        #expect(FileManager.default.fileExists(atPath: recordFile) == !keepsState)
        if keepsState {
            // The plugin's process is in the log, as the record the next heraldd replays.
            let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: daemon.socketPath + ".state")))
            let processes = try StateLog.replay(bytes).state.pluginProcesses
            #expect(processes.count == 1, "the log's plugin processes: \(processes)")
        }

        daemon.process.signal(SIGKILL)
        #expect(try await daemon.process.waitForExit(timeout: .seconds(10)) == SIGKILL)
        #expect(PluginProbe.isRunning(child), "the child went with heraldd: the test shows nothing")
        try FileManager.default.removeItem(atPath: bed.userFolder + "/scrubbed.plugin")
        let next = try await bed.startDaemon(arguments: arguments)
        try await next.process.wait(for: "leftovers ended", timeout: .seconds(10)) { _, stderr in
            stderr.contains { $0.contains("left by the last heraldd on this socket") }
        }
        let gone = try await eventually(timeout: .seconds(10)) { PluginProbe.isGone(child) }
        #expect(gone, "pid \(child) outlived its plugin and two heraldds")
        if !gone { kill(child, SIGKILL) }
        if keepsState {
            // Ended, so the log's record is empty (read while the new heraldd runs, with no plugin of its own).
            let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: next.socketPath + ".state")))
            #expect(try StateLog.replay(bytes).state.pluginProcesses.isEmpty)
        }
        #expect(!FileManager.default.fileExists(atPath: recordFile) || !keepsState)
    }
}
