import Foundation
import HeraldLaunch
import Testing

/// `LaunchedDaemon` with stand-in programs written in sh, so what it does with a daemon that never becomes ready, or
/// exits first, is checked without heraldd. (heraldd itself is started with it by every end-to-end test.)
struct LaunchedDaemonTests {
    private func script(_ text: String) -> Program {
        // sh -c SCRIPT NAME ARGS...: the launcher's --socket PATH arrive as $1 and $2.
        var program = Program(executable: "/bin/sh")
        program.leadingArguments = ["-c", text, "stand-in"]
        return program
    }

    @Test func returnsOnceTheReadyLineIsWrittenWithTheSocketPassedAsAnOption() async throws {
        let daemon = try await LaunchedDaemon.start(
            // Longer than the test can take on a loaded machine: the exit status must be the kill's.
            script(#"echo "stand-in: ready on $2" >&2; exec sleep 600"#),
            socketPath: "/tmp/launched-test-socket"
        )
        #expect(daemon.socketPath == "/tmp/launched-test-socket")
        #expect(daemon.process.stderr.contains("ready on /tmp/launched-test-socket"))
        // SIGKILL: a child of the test runner may inherit a mask that blocks SIGTERM.
        #expect(try await daemon.stop(signal: SIGKILL) == SIGKILL)
    }

    @Test func aDaemonThatExitsFirstFailsWithItsOutput() async throws {
        await #expect(throws: ChildProcess.Timeout.self) {
            _ = try await LaunchedDaemon.start(
                script(#"echo "stand-in: cannot bind" >&2; exit 1"#),
                socketPath: "/tmp/launched-test-socket"
            )
        }
    }

    @Test func aDaemonThatStaysSilentTimesOutAndIsKilled() async throws {
        let pidFile = NSTemporaryDirectory() + "launched-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        defer { try? FileManager.default.removeItem(atPath: pidFile) }
        await #expect(throws: ChildProcess.Timeout.self) {
            _ = try await LaunchedDaemon.start(
                script("echo $$ > \(pidFile); exec sleep 30"),
                socketPath: "/tmp/launched-test-socket",
                timeout: .milliseconds(500)
            )
        }
        let text = try String(contentsOfFile: pidFile, encoding: .utf8)
        let pid = try #require(Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)))
        // Killed, and reaped by Foundation: the pid is gone (or at most a zombie for a moment).
        var gone = false
        for _ in 0..<200 where !gone {
            let state = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
            gone = state.isEmpty || state.contains(") Z ")
            if !gone { try await Task.sleep(for: .milliseconds(10)) }
        }
        #expect(gone)
    }

    @Test func theEnvironmentLosesHeraldSocketSoOnlyTheOptionDecides() async throws {
        // Asked for through `environment`, as a test's own HERALD_SOCKET would come from this process's: changing
        // this process's environment here would race with the other tests starting processes (it crashed one).
        let daemon = try await LaunchedDaemon.start(
            script(#"echo "stand-in: HERALD_SOCKET=[${HERALD_SOCKET-unset}] ready on $2" >&2; exec sleep 600"#),
            socketPath: "/tmp/launched-test-socket",
            environment: ["HERALD_SOCKET": "/tmp/should-not-be-seen"]
        )
        #expect(daemon.process.stderr.contains("HERALD_SOCKET=[unset]"))
        daemon.process.signal(SIGKILL)
    }
}
