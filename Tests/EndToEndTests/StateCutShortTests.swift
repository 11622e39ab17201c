import Foundation
import HeraldLaunch
import HeraldTestSupport
import Testing

/// The state file truncated under heraldd by another process of the user (a `: > state.log` by mistake, a cleaner):
/// the log is written through a shared mapping, where a store past the file's new end raises SIGBUS. heraldd goes
/// on, says so, and writes the file again from its own state, so a restart after that loses nothing.
@Suite struct StateCutShortTests {
    @Test(.hangGuard)
    func aStateFileCutShortByAnotherProcessIsWrittenAgain() async throws {
        let directory = TemporaryDirectory()
        let path = directory.file("state.log")
        let arguments = ["--state-file", path]
        let first = try await TestDaemon.start(arguments: arguments, directory: directory)
        let socket = first.socketPath
        try await blocking {
            let writer = try WireClient.ready(socketPath: socket)
            for index in 0..<50 { try writer.post("cut.before.\(index)", "\(index)", retain: true) }
        }
        #expect(truncate(path, 0) == 0)
        // Each post after the cut is acknowledged: the daemon did not die of the fault.
        try await blocking {
            let writer = try WireClient.ready(socketPath: socket)
            for index in 0..<50 { try writer.post("cut.after.\(index)", "\(index)", retain: true) }
        }
        #expect(first.process.exitStatus == nil, "\(first.process.stderr)")
        let rewritten = try await eventually(timeout: .seconds(30)) {
            first.process.stderr.contains("was cut short by another process")
                && first.process.stderr.contains("state: compacted")
        }
        #expect(rewritten, "\(first.process.stderr)")

        try await first.stop(signal: SIGKILL)
        let second = try await TestDaemon.start(arguments: arguments, directory: directory)
        for name in ["cut.before.0", "cut.before.49", "cut.after.0", "cut.after.49"] {
            let got = try await run("herald", ["get", name], environment: second.environment)
            #expect(got.status == 0 && !got.stdout.isEmpty, "\(name): \(got.stderr)")
        }
        #expect(second.process.stderr.contains("restored 100 retained values"), "\(second.process.stderr)")
        #expect(!second.process.stderr.contains("damaged"), "\(second.process.stderr)")
        _ = try await second.stop()
    }
}
