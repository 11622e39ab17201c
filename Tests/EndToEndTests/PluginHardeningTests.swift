import Foundation
import HeraldLaunch
import HeraldTestSupport
import Testing

/// Plugin files and plugins as careless setups and buggy plugins make them (issue 27): no file name crashes
/// heraldd, entries that are not files are listed with why, and a start that can never work fails at once, saying
/// why.
@Suite(.serialized)
struct PluginHardeningTests {
    /// The names the issue found crashing heraldd (a failed check when it posted `herald.plugin.NAME`), at start and
    /// at a reload, beside entries that are not regular files.
    @Test func fileNamesNoPluginMayHaveAndEntriesThatAreNoFilesAreRefusedAndListedWhileTheDaemonServes()
        async throws
    {
        let bed = try PluginBed()
        let good = try bed.script("good", "exec sleep 1000")
        try bed.plugin("good", exec: good, ["Activation=start"])
        let badNames = [
            "my plugin", ".hidden", "", "a*b", "a..b", "a.b.", String(repeating: "n", count: 242),
        ]
        for name in badNames { try bed.plugin(name, exec: good, ["Activation=start"]) }
        try FileManager.default.createDirectory(
            atPath: bed.userFolder + "/dir.plugin",
            withIntermediateDirectories: true
        )
        #expect(mkfifo(bed.userFolder + "/fifo.plugin", 0o644) == 0)
        try FileManager.default.createSymbolicLink(
            atPath: bed.userFolder + "/link.plugin",
            withDestinationPath: bed.directory.file("nowhere")
        )
        let daemon = try await bed.startDaemon()
        let watcher = try await PluginWatcher.start(daemon)
        try await watcher.waitFor("good", "running") { $0.state == "running" }

        var listed = try await PluginProbe.list(daemon)
        let refused = listed.values.filter { $0.state == "refused" }
        #expect(refused.count == badNames.count + 3, "\(listed.values.map(\.description))")
        for name in badNames {
            #expect(
                refused.contains { $0.file?.hasSuffix("/\(name).plugin") == true && $0.reason != nil },
                "\(name).plugin is not listed with a reason"
            )
        }
        #expect(
            refused.contains { $0.file?.hasSuffix("/dir.plugin") == true && $0.reason?.contains("directory") == true }
        )
        #expect(refused.contains { $0.file?.hasSuffix("/fifo.plugin") == true && $0.reason?.contains("FIFO") == true })
        #expect(
            refused.contains {
                $0.file?.hasSuffix("/link.plugin") == true && $0.reason?.contains("symbolic link to nothing") == true
            }
        )
        #expect(daemon.process.stderr.contains("dir.plugin refused: it is a directory, not a regular file"))

        // A reload with another such name: the daemon and its clients live on.
        let client = try WireClient.ready(socketPath: daemon.socketPath)
        try bed.plugin("x y", exec: good)
        #expect(try await PluginProbe.command(daemon, ["reload"]).status == 0)
        #expect(try await eventually { (try? await PluginProbe.list(daemon))?.count == listed.count + 1 })
        listed = try await PluginProbe.list(daemon)
        #expect(listed.values.contains { $0.file?.hasSuffix("/x y.plugin") == true && $0.state == "refused" })
        try client.post("still.here")
        #expect(PluginProbe.isRunning(daemon.pid))
    }

    @Test func aMissingWorkingDirectoryOrInterpreterFailsAtOnceNamingIt() async throws {
        let bed = try PluginBed()
        let fine = try bed.script("fine", "exec sleep 1000")
        try bed.plugin("nodir", exec: fine, ["Activation=start", "WorkingDirectory=/nonexistent/dir"])
        let script = bed.directory.file("orphan.sh")
        try bed.write(script, "#!/nonexistent/interpreter\necho hi\n", mode: 0o755)
        try bed.plugin("nointerpreter", exec: script, ["Activation=start"])
        let daemon = try await bed.startDaemon()
        let watcher = try await PluginWatcher.start(daemon)
        let noDirectory = try await watcher.waitFor("nodir", "failed") { $0.state == "failed" }
        #expect(noDirectory.restarts == 0)
        #expect(noDirectory.lastExit?.contains("WorkingDirectory=/nonexistent/dir") == true, "\(noDirectory)")
        let noInterpreter = try await watcher.waitFor("nointerpreter", "failed") { $0.state == "failed" }
        #expect(noInterpreter.restarts == 0)
        #expect(noInterpreter.lastExit?.contains("interpreter /nonexistent/interpreter") == true, "\(noInterpreter)")
        #expect(!daemon.process.stderr.contains("nodir: restarting"))
    }

    @Test func environmentSettingTheDaemonsVariablesAndANulAreRefused() async throws {
        let bed = try PluginBed()
        let fine = try bed.script("fine", "exec sleep 1000")
        try bed.plugin("sneaky", exec: fine, ["Activation=start", "Environment=HERALD_SOCKET=/tmp/elsewhere"])
        // Before, the argument was cut at the NUL without a word: /bin/echo printed "ab".
        try bed.pluginFile("nul", "[Plugin]\nExec=/bin/echo ab\0cd\nActivation=start\n")
        let daemon = try await bed.startDaemon()
        let listed = try await PluginProbe.list(daemon)
        #expect(listed["sneaky"]?.state == "refused")
        #expect(listed["sneaky"]?.reason?.contains("may not set HERALD_SOCKET") == true)
        #expect(listed["nul"]?.state == "refused")
        #expect(listed["nul"]?.reason == "line 2: a NUL byte; a plugin file is text")
    }
}
