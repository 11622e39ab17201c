import Foundation
import HeraldLaunch
import HeraldTestSupport
import Testing

/// heraldd reading its plugin folders (issue 17): files it refuses and why, a user file masking or overriding a
/// system one, and `herald plugins reload` or SIGHUP picking up added, changed and removed files.
@Suite(.serialized)
struct PluginFolderTests {
    @Test func refusesAGroupWritableAForeignABadKeyAndAnUntrustedExecutableFileWhileAGoodPluginRuns() async throws {
        let bed = try PluginBed()
        let sleeper = try bed.script("sleeper", "echo $$ >> $OUT/$HERALD_PLUGIN.starts\nexec sleep 1000")
        try bed.plugin("good", exec: sleeper, ["Activation=start"])
        let groupWritable = try bed.plugin("groupw", exec: sleeper, ["Activation=start"])
        try FileManager.default.setAttributes([.posixPermissions: 0o664], ofItemAtPath: groupWritable)
        let foreign = try bed.plugin("foreign", exec: sleeper, ["Activation=start"])
        // Another user's file: the tests run as root, which may give it away.
        #expect(chown(foreign, 65534, 65534) == 0, "chown needs root: errno \(errno)")
        let badKey = try bed.plugin("badkey", exec: sleeper, ["Activation=start", "Colour=blue"])
        let looseScript = try bed.script("loose", "exec sleep 1000")
        try FileManager.default.setAttributes([.posixPermissions: 0o775], ofItemAtPath: looseScript)
        let looseExec = try bed.plugin("looseexec", exec: looseScript, ["Activation=start"])

        let daemon = try await bed.startDaemon()
        let watcher = try await PluginWatcher.start(daemon)
        let good = try await watcher.waitFor("good", "running") { $0.state == "running" }
        let goodPID = try #require(good.pid)
        // The script records its start right after exec: wait for the line, not for the state alone.
        #expect(try await eventually { bed.pids(in: "good.starts") == [goodPID] })

        let uid = getuid()
        let reasons = [
            "groupw": (groupWritable, "writable by group or others (mode 0664)"),
            "foreign": (foreign, "owned by uid 65534, not by \(uid) or root"),
            "badkey": (badKey, "line 4: unknown key 'Colour'"),
            "looseexec": (looseExec, "executable \(looseScript): writable by group or others (mode 0775)"),
        ]
        let listed = try await PluginProbe.list(daemon)
        #expect(Set(listed.keys) == ["good", "groupw", "foreign", "badkey", "looseexec"], "\(listed)")
        #expect(listed["good"]?.state == "running")
        #expect(listed["good"]?.reason == nil)
        let text = try await PluginProbe.command(daemon, [])
        #expect(text.status == 0)
        for (name, (path, reason)) in reasons.sorted(by: { $0.key < $1.key }) {
            #expect(listed[name]?.state == "refused", "\(name): \(String(describing: listed[name]))")
            #expect(listed[name]?.reason == reason, "\(name): \(String(describing: listed[name]))")
            #expect(listed[name]?.file == path)
            #expect(listed[name]?.pid == nil)
            #expect(text.stdout.contains("\(name): refused"), "\(text.stdout)")
            #expect(text.stdout.contains("    file: \(path)\n    refused: \(reason)\n"), "\(text.stdout)")
            // One log line naming the file and the reason.
            let logged = daemon.process.stderrLines.filter { $0.contains("plugin file \(path) refused: \(reason)") }
            #expect(logged.count == 1, "\(daemon.process.stderr)")
            #expect(bed.pids(in: "\(name).starts").isEmpty, "\(name) ran")
        }
        #expect(daemon.process.stderr.contains("plugins: 1 loaded, 4 refused, 0 masked"), "\(daemon.process.stderr)")
        // A refused plugin cannot be started, and the error says why.
        let start = try await PluginProbe.command(daemon, ["start", "groupw"])
        #expect(start.status == 1)
        #expect(start.stderr.contains("was refused: writable by group or others"), "\(start.stderr)")
    }

    @Test func aUserFileOverridesOrMasksTheSystemFileOfTheSameName() async throws {
        let bed = try PluginBed()
        let mark = try bed.script("mark", "echo \"$WHO $$\" >> $OUT/$HERALD_PLUGIN.ran\nexec sleep 1000")
        for name in ["masked", "disabled", "overridden", "systemonly"] {
            try bed.plugin(name, system: true, exec: mark, ["Activation=start", "Environment=WHO=system"])
        }
        try bed.pluginFile("masked", "")
        try bed.pluginFile("disabled", "# no longer wanted\n[Plugin]\nEnabled=false\n")
        let userFile = try bed.plugin("overridden", exec: mark, ["Activation=start", "Environment=WHO=user"])

        let daemon = try await bed.startDaemon()
        let watcher = try await PluginWatcher.start(daemon)
        let systemOnly = try await watcher.waitFor("systemonly", "running") { $0.state == "running" }
        let overridden = try await watcher.waitFor("overridden", "running") { $0.state == "running" }
        #expect(systemOnly.file == bed.systemFolder + "/systemonly.plugin")
        #expect(overridden.file == userFile)
        #expect(try await eventually { bed.lines(of: "overridden.ran") == ["user \(try #require(overridden.pid))"] })
        let systemOnlyPID = try #require(systemOnly.pid)
        // The script records its start right after exec: wait for the line, not for the state alone.
        #expect(try await eventually { bed.lines(of: "systemonly.ran") == ["system \(systemOnlyPID)"] })

        let listed = try await PluginProbe.list(daemon)
        #expect(Set(listed.keys) == ["overridden", "systemonly"], "\(listed)")
        // All four start in the same turn, so a masked one would have been spawned with them.
        #expect(bed.lines(of: "masked.ran").isEmpty)
        #expect(bed.lines(of: "disabled.ran").isEmpty)
        #expect(daemon.process.stderr.contains("plugins: 2 loaded, 0 refused, 2 masked"), "\(daemon.process.stderr)")
    }

    @Test(arguments: ["herald plugins reload", "SIGHUP"])
    func reloadStartsAnAddedFileRestartsAChangedOneAndStopsARemovedOne(trigger: String) async throws {
        let bed = try PluginBed()
        let sleeper = try bed.script("sleeper", "echo $$ >> $OUT/$HERALD_PLUGIN.starts\nexec sleep 1000")
        let versionA = try bed.script("a", "echo \"A $$\" >> $OUT/change.log\nexec sleep 1000")
        let versionB = try bed.script("b", "echo \"B $$\" >> $OUT/change.log\nexec sleep 1000")
        try bed.plugin("keep", exec: sleeper, ["Activation=start"])
        try bed.plugin("change", exec: versionA, ["Activation=start"])
        let removed = try bed.plugin("remove", exec: sleeper, ["Activation=start"])
        let daemon = try await bed.startDaemon()
        let watcher = try await PluginWatcher.start(daemon)
        var before: [String: Int32] = [:]
        for name in ["keep", "change", "remove"] {
            let running = try await watcher.waitFor(name, "running") { $0.state == "running" }
            let pid = try #require(running.pid)
            before[name] = pid
        }
        #expect(try await eventually { bed.lines(of: "change.log") == ["A \(before["change"]!)"] })

        try bed.plugin("add", exec: sleeper, ["Activation=start"])
        try bed.plugin("change", exec: versionB, ["Activation=start"])
        try FileManager.default.removeItem(atPath: removed)
        if trigger == "SIGHUP" {
            daemon.process.signal(SIGHUP)
        } else {
            let reload = try await PluginProbe.command(daemon, ["reload"])
            #expect(reload.status == 0, "\(reload.stderr)")
        }

        let added = try await watcher.waitFor("add", "running") { $0.state == "running" }
        let addedPID = try #require(added.pid)
        // The script records its start right after exec: wait for the line, not for the state alone.
        #expect(try await eventually { bed.pids(in: "add.starts") == [addedPID] })
        let oldChange = before["change"]!
        let changed = try await watcher.waitForLatest("change", "running anew") {
            $0.state == "running" && $0.pid != oldChange
        }
        let newChange = try #require(changed.pid)
        // The new process runs the new file's program.
        #expect(try await eventually { bed.lines(of: "change.log") == ["A \(oldChange)", "B \(newChange)"] })
        #expect(PluginProbe.isGone(oldChange))
        // A restart for a changed file is not a failure.
        #expect(changed.restarts == 0)
        try await watcher.waitForLatest("remove", "cleared") { $0.state == "cleared" }
        #expect(try await eventually { PluginProbe.isGone(before["remove"]!) })
        #expect(bed.pids(in: "remove.starts") == [before["remove"]!])

        let listed = try await PluginProbe.list(daemon)
        #expect(Set(listed.keys) == ["add", "change", "keep"], "\(listed)")
        // The unchanged plugin was left alone.
        #expect(listed["keep"]?.pid == before["keep"])
        #expect(bed.pids(in: "keep.starts") == [before["keep"]!])
        let names = try await run("herald", ["names"], environment: daemon.environment)
        #expect(!names.stdout.contains("herald.plugin.remove"), "\(names.stdout)")
        #expect(daemon.process.stderr.contains("reloading the plugin folders"))
    }
}

extension PluginFolderTests {
    @Test func reloadStopsAPluginWhoseFileBecameUntrustedAndShowsWhy() async throws {
        let bed = try PluginBed()
        let sleeper = try bed.script("sleeper", "echo $$ >> $OUT/$HERALD_PLUGIN.starts\nexec sleep 1000")
        let file = try bed.plugin("turned", exec: sleeper, ["Activation=start"])
        let daemon = try await bed.startDaemon()
        let watcher = try await PluginWatcher.start(daemon)
        let running = try await watcher.waitFor("turned", "running") { $0.state == "running" }
        let pid = try #require(running.pid)

        try FileManager.default.setAttributes([.posixPermissions: 0o666], ofItemAtPath: file)
        #expect(try await PluginProbe.command(daemon, ["reload"]).status == 0)
        let refused = try await watcher.waitForLatest("turned", "refused") { $0.state == "refused" }
        #expect(refused.reason == "writable by group or others (mode 0666)")
        #expect(refused.pid == nil)
        #expect(try await eventually { PluginProbe.isGone(pid) })
        // The script records its start right after exec: wait for the line, not for the state alone.
        #expect(try await eventually { bed.pids(in: "turned.starts") == [pid] })

        // Trusted again, it loads and starts again.
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: file)
        #expect(try await PluginProbe.command(daemon, ["reload"]).status == 0)
        let again = try await watcher.waitForLatest("turned", "running again") { $0.state == "running" }
        #expect(again.pid != pid)
        #expect(again.reason == nil)
        // The script records its start right after exec: wait for the line, not for the state alone.
        #expect(try await eventually { bed.pids(in: "turned.starts").count == 2 })
    }
}
