import Foundation
import HeraldLaunch
import HeraldTestSupport
import Testing

/// The dashboard's load figures (issue 32, "Load"): 10,000 posts a second for 10 s with the page open in headless
/// Chromium. It prints the page's timer lag, the dashboard's RSS and CPU, and what another subscriber of heraldd
/// received, with the same flood run first without the dashboard as the control; the figures go to
/// Benchmarks/README.md, not into assertions, which check only what must hold on any machine: the other subscriber
/// loses nothing silently, the dashboard's RSS stays under a bound, the page still answers.
///
/// Run by Benchmarks/dashboard-load.sh (HERALD_DASHBOARD_LOAD=1), alone: it is a measurement, and Chromium plus the
/// flood are too heavy to run beside the rest of the tests on a small machine.
@Suite(.serialized)
struct DashboardLoadTests {
    static let enabled = ProcessInfo.processInfo.environment["HERALD_DASHBOARD_LOAD"] == "1"

    /// The resident set of `pid` in KiB, from /proc.
    static func rssKiB(_ pid: Int32) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") }
        return line.flatMap { Int($0.split(separator: " ", omittingEmptySubsequences: true)[1]) }
    }

    /// The CPU time `pid` has used, in seconds (user and system), from /proc.
    static func cpuSeconds(_ pid: Int32) -> Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return 0 }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // After the name: utime and stime are the 12th and 13th fields, in clock ticks of 1/100 s.
        return (Double(fields[11]) ?? 0) / 100 + (Double(fields[12]) ?? 0) / 100
    }

    /// What one flood did: how late the publisher's slices got, and what another subscriber received.
    struct Flood {
        var late = Duration.zero
        var received = 0
        var dropped = 0
        var accounted = false
    }

    /// `rate` posts a second for `seconds` to 100 names (64-byte payloads, in 100 ms slices), with a `herald observe`
    /// of `load.**` as another client; `sample` runs after each slice.
    static func flood(_ daemon: TestDaemon, rate: Int, seconds: Int, sample: () -> Void) async throws -> Flood {
        let observer = try ChildProcess(
            TestBinaries.path("herald"),
            ["observe", "load.**", "--json", "--ready"],
            environment: daemon.environment
        )
        defer { observer.signal(SIGKILL) }
        try await observer.waitForStderrLine(containing: "ready")
        let publisher = try WireClient.ready(socketPath: daemon.socketPath)
        var result = Flood()
        let clock = ContinuousClock()
        let start = clock.now
        for slice in 0..<(seconds * 10) {
            let due = start + .milliseconds(100 * slice)
            if clock.now < due {
                try await Task.sleep(until: due, clock: clock)
            } else {
                result.late = max(result.late, clock.now - due)
            }
            try publisher.blast(rate / 10, to: "load.n\(slice % 100)", payloadSize: 64)
            sample()
        }
        // Each post, or a drop notice that counts it: heraldd's own answer to a subscriber that reads too slowly,
        // which a loaded machine can make of it.
        func tally() -> (received: Int, dropped: Int) {
            var received = 0
            var dropped = 0
            for line in observer.stdoutLines {
                if line.contains("\"name\":\"load.") {
                    received += 1
                } else if line.contains("\"notice\":\"dropped\""),
                    let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
                {
                    dropped += object["count"] as? Int ?? 0
                }
            }
            return (received, dropped)
        }
        result.accounted = try await eventually(timeout: .seconds(120)) {
            let (received, dropped) = tally()
            return received + dropped >= rate * seconds
        }
        (result.received, result.dropped) = tally()
        return result
    }

    @Test(
        .enabled(if: enabled, "a measurement: run it with Benchmarks/dashboard-load.sh (HERALD_DASHBOARD_LOAD=1)"),
        .requires("chromium"),
        .hangGuard
    )
    func tenThousandPostsASecondForTenSecondsWithThePageOpen() async throws {
        let rate = Int(ProcessInfo.processInfo.environment["RATE"] ?? "") ?? 10_000
        let seconds = Int(ProcessInfo.processInfo.environment["SECONDS_OF_LOAD"] ?? "") ?? 10
        let total = rate * seconds
        let daemon = try await TestDaemon.start()
        // The control: the same flood with no dashboard.
        let control = try await Self.flood(daemon, rate: rate, seconds: seconds) {}

        let dashboard = try await DashboardProcess.start(daemon)
        defer { dashboard.process.signal(SIGKILL) }
        let browser = try await Browser.launch()
        do {
            try await browser.navigate(to: dashboard.url)
            #expect(
                try await eventually(timeout: .seconds(60)) {
                    try await browser.isTrue("document.getElementById('connection').textContent === 'Live'")
                }
            )
            // The same timer over the same time with no flood, in this run: what the machine gives an idle page.
            _ = try await browser.evaluate("heraldTimerLag.max = 0, heraldTimerLag.samples = 0, true")
            _ = try await eventually(timeout: .seconds(Double(seconds))) { false }
            let idleLag = try await browser.evaluate("JSON.stringify(heraldTimerLag)") as? String ?? "?"
            _ = try await browser.evaluate("heraldTimerLag.max = 0, heraldTimerLag.samples = 0, true")

            let pid = dashboard.process.pid
            let rssBefore = Self.rssKiB(pid) ?? 0
            let cpuBefore = Self.cpuSeconds(pid)
            var peakRSS = rssBefore
            let flood = try await Self.flood(daemon, rate: rate, seconds: seconds) {
                peakRSS = max(peakRSS, Self.rssKiB(pid) ?? 0)
            }
            let cpu = Self.cpuSeconds(pid) - cpuBefore
            let lag = try await browser.evaluate("JSON.stringify(heraldTimerLag)") as? String ?? "?"
            // Let the page catch up, then look again: still answering, and what it says it missed.
            _ = try await eventually(timeout: .seconds(3)) { false }
            let lagAfter = try await browser.evaluate("JSON.stringify(heraldTimerLag)") as? String ?? "?"
            let missed = try await browser.evaluate("document.getElementById('dropped').textContent") as? String ?? "?"
            let rssAfter = Self.rssKiB(pid) ?? 0
            print(
                """
                dashboard load: \(total) posts at \(rate)/s to 100 names, twice: without the dashboard, then with it \
                and its page open (the publisher's slices at most \(control.late) and \(flood.late) late)
                dashboard load: page timer lag (100 ms interval, ms) idle \(idleLag); during the flood \(lag); \
                after \(lagAfter)
                dashboard load: dashboard RSS \(rssBefore) KiB before, \(peakRSS) KiB peak, \(rssAfter) KiB after; \
                \(cpu) s of CPU during the flood
                dashboard load: the page says: \(missed)
                dashboard load: another subscriber received \(control.received) posts and was told of \
                \(control.dropped) dropped without the dashboard; \(flood.received) and \(flood.dropped) with it
                """
            )
            #expect(control.accounted && flood.accounted, "every post reached the other subscriber or was counted")
            #expect(peakRSS < 256 * 1024, "the dashboard's RSS stays bounded: \(peakRSS) KiB")
            #expect(lagAfter != "?", "the page still answers")
        } catch {
            await browser.close()
            throw error
        }
        #expect(await browser.close(), "every chromium process ended")
    }
}
