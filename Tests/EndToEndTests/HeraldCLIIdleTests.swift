import Foundation
import HeraldLaunch
import HeraldTestSupport
import Testing

/// Nothing wakes while nothing happens: `herald wait`, `observe`, `monitor` and `dashboard`, the commands a session
/// leaves running, make no context switch in any thread while no notification comes, after they have handled one.
///
/// Every thread counts, libdispatch's included: `herald` runs its commands on a thread of its own
/// (`runOnOwnThread`), and reads its signals from a pipe, so the global executor's worker pool, whose monitor wakes a
/// process once a second for good, is never started. Before, each of these woke 10 times in 10 s.
@Suite struct HeraldCLIIdleTests {
    @Test(.hangGuard, arguments: ["observe", "wait", "monitor", "wait-timeout", "observe-timeout"])
    func aWaitingCommandDoesNotWakeAtAll(command: String) async throws {
        let daemon = try await TestDaemon.start()
        let arguments: [String] =
            switch command {
            case "observe": ["observe", "idle.**"]
            case "wait": ["wait", "idle.never"]
            // A timeout pending all along: its timer must not wake the process either.
            case "wait-timeout": ["wait", "--timeout", "600", "idle.never"]
            case "observe-timeout": ["observe", "--timeout", "600", "idle.**"]
            default: ["monitor"]
            }
        let process = try await CLI.startSubscribed(arguments, daemon: daemon)
        // Work first, so the quiet comes after the command has handled a post (or, for wait, seen one that is not
        // the one it waits for).
        try await CLI.post(["idle.first", "n=1"], daemon: daemon)
        if !command.hasPrefix("wait") {
            try await process.waitForStdoutLine(containing: "idle.first")
        }
        let windows = try await Self.quietWindow(of: process.pid)
        #expect(windows.quiet, "herald \(command) woke in successive windows of 3 s: \(windows.seen)")
        #expect(process.exitStatus == nil, "herald \(command) ended: \(process.stderr)")
        _ = await process.stop()
        _ = try await daemon.stop()
    }

    @Test(.hangGuard)
    func anIdleDashboardDoesNotWakeAtAll() async throws {
        let daemon = try await TestDaemon.start()
        let dashboard = try await DashboardProcess.start(daemon)
        // A page load and a post through the form: the actions run as tasks, which must not reach the global pool.
        let page = try await dashboard.request("GET", "/?token=\(dashboard.token)")
        #expect(page.status == 200)
        let posted = try await dashboard.request(
            "POST",
            "/post?token=\(dashboard.token)",
            headers: ["Origin": "http://127.0.0.1:\(dashboard.port)", "Accept": "application/json"],
            body: "name=idle.form&payload=%7B%22n%22%3A1%7D&retain=on"
        )
        #expect(posted.status / 100 == 2, "\(posted)")
        let retained = try await eventually(timeout: .seconds(20)) {
            (try? await CLI.run(["get", "idle.form"], daemon: daemon))?.status == 0
        }
        #expect(retained)
        let windows = try await Self.quietWindow(of: dashboard.process.pid)
        #expect(windows.quiet, "herald dashboard woke in successive windows of 3 s: \(windows.seen)")
        _ = await dashboard.process.stop()
        _ = try await daemon.stop()
    }

    /// Windows of 3 s, for up to 60 s, until one passes with no context switch in any thread of `pid`: in the whole
    /// parallel run the command may still be finishing its last step when the first opens, but a process that wakes
    /// on a timer (libdispatch's once-a-second monitor) never has one. Returns each window's woken threads.
    static func quietWindow(of pid: Int32) async throws -> (quiet: Bool, seen: [String]) {
        var seen: [String] = []
        let quiet = try await eventually(timeout: .seconds(60)) {
            let before = try MQTTBridgeIdleTests.contextSwitches(of: pid)
            try await Task.sleep(for: .seconds(3))
            let after = try MQTTBridgeIdleTests.contextSwitches(of: pid)
            var woken: [String] = []
            for (id, thread) in after.sorted(by: { $0.key < $1.key }) {
                let count = thread.switches - (before[id]?.switches ?? 0)
                if count > 0 { woken.append("\(thread.name) \(count)") }
            }
            seen.append(woken.joined(separator: ", "))
            return woken.isEmpty
        }
        return (quiet, seen)
    }
}
