import Foundation
import HeraldLaunch
import HeraldTestSupport
import Testing

/// Many plugins (issue 27): heraldd answers clients while it starts them, and SIGTERM with all of them running
/// ends within the shutdown bound. How fast, at 2,000 plugins in a release build, is Benchmarks/plugins.sh's.
@Suite(.serialized)
struct PluginScaleTests {
    @Test func aClientIsServedWhileHundredsOfPluginsStartAndSIGTERMEndsThemWithinTheBound() async throws {
        let count = 600
        let bed = try PluginBed()
        let daemon = try await bed.startDaemon()
        // The client is connected and subscribed before the plugins come (by a reload), so its round trips begin
        // as the starts do, however late this test's thread is scheduled on a loaded machine.
        let client = try WireClient.ready(socketPath: daemon.socketPath)
        _ = try client.subscribe(1, "scale.ping")
        for index in 0..<count {
            try bed.pluginFile("p\(index)", "[Plugin]\nExec=/bin/sleep 1000\nActivation=start\n")
        }
        daemon.process.signal(SIGHUP)
        // Round trips (a post to its own subscription) while the plugins are being started: the loop serves
        // clients between shares of starts, where it once started every plugin before serving anyone.
        let clock = ContinuousClock()
        let pid = daemon.pid
        // Seconds of blocking reads: on a thread of its own, off the cooperative pool, whose two threads every other
        // test of a parallel run needs (see `blocking`).
        let (startedAtAnswers, slowest) = try await blocking { () throws -> ([Int], Duration) in
            var startedAtAnswers: [Int] = []
            var slowest = Duration.zero
            var request: UInt32 = 10
            while startedAtAnswers.last ?? 0 < count && startedAtAnswers.count < 100_000 {
                request += 1
                let asked = clock.now
                try client.post("scale.ping", "\(request)", request: request)
                while true {
                    guard let frame = try client.receive() else { throw TestFailure("the daemon closed the client") }
                    if case .notify(let notify) = frame, notify.payload == Array("\(request)".utf8) { break }
                }
                slowest = max(slowest, clock.now - asked)
                startedAtAnswers.append(Self.children(of: pid))
            }
            return (startedAtAnswers, slowest)
        }
        let during = startedAtAnswers.filter { $0 > 0 && $0 < count }
        print(
            "\(during.count) round trips while plugins started, slowest \(slowest); plugins started at some of "
                + "them: \(stride(from: 0, to: during.count, by: max(1, during.count / 10)).map { during[$0] })"
        )
        #expect(during.count >= 2, "no client served while plugins were starting")
        // What the 100 ms is measured as: Benchmarks/plugins.sh, at 2,000 plugins in release. Here, in a
        // parallel debug run on two cores, only a stall of the loop (the whole start-up, before the fix) is caught.
        #expect(slowest < .seconds(10))
        let status = try await run("herald", ["status"], environment: daemon.environment)
        #expect(status.status == 0, "\(status.stderr)")

        // Timed from /proc, not from the report of the exit, which a loaded machine can delay by seconds.
        let signalled = clock.now
        daemon.process.signal(SIGTERM)
        let gone = try await eventually(timeout: .seconds(60)) { PluginProbe.isGone(daemon.pid) }
        let took = clock.now - signalled
        print("SIGTERM with \(count) plugins running: gone after \(took)")
        #expect(gone)
        #expect(try await daemon.process.waitForExit(timeout: .seconds(20)) == 0)
        // The documented bound is 2 s for the flush, then the plugins' 2 s to exit after SIGTERM; Benchmarks/plugins.sh
        // measures it at 2,000 plugins (0.23 s in release). A parallel debug run on two cores took 5.7 s here, and
        // 9.4 s once the suite had grown past 1,100 tests, so the test allows five times the bound: an exit that
        // waited for the plugins one by one (2 s each) would still be minutes past it.
        #expect(took < .seconds(20))
    }

    /// The processes `pid` has started that are still running.
    private static func children(of pid: Int32) -> Int {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.reduce(0) { total, task in
            let text = (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/children", encoding: .utf8)) ?? ""
            return total + text.split(separator: " ").count
        }
    }
}
