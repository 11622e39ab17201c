import HeraldLaunch
import HeraldTestSupport
import Testing

/// Every executable's `main.swift` goes through HeraldCommandLine's `runMain`, so each answers `--version`, a usage
/// error and a failure to start the same way; herald-bench's `--version` once printed nothing.
@Suite struct ExecutableMainTests {
    @Test(arguments: ["heraldd", "herald", "herald-chat", "herald-chat-server", "herald-bench", "herald-mqtt-bridge"])
    func versionPrintsTheNameAndVersionOnStdoutAndExitsZero(executable: String) async throws {
        let result = try await run(executable, ["--version"])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(result.stdoutLines == ["\(executable) 0.1.0"])
        #expect(result.stderr.isEmpty)
    }

    @Test(arguments: ["heraldd", "herald-chat", "herald-chat-server", "herald-bench", "herald-mqtt-bridge"])
    func anUnknownOptionIsAUsageErrorOnStderrWithStatus64(executable: String) async throws {
        let result = try await run(executable, ["--no-such-option"])
        #expect(result.status == 64)
        #expect(result.stdoutLines.isEmpty)
        #expect(result.stderr.hasPrefix("Error: "), "stderr: \(result.stderr)")
        #expect(result.stderr.contains("--help"))
    }

    /// A daemon that cannot start says why as runMain does, `Error: ...` on stderr, and exits 1: heraldd cannot make
    /// its socket directory under a file, the chat server cannot listen on a host that is not an address.
    @Test(arguments: [
        ("heraldd", ["--socket", "/dev/null/socket"]),
        ("herald-chat-server", ["--host", "not-an-address", "--port", "0"]),
    ])
    func aFailureToStartIsAnErrorOnStderrWithStatus1(executable: String, arguments: [String]) async throws {
        let result = try await run(executable, arguments)
        #expect(result.status == 1, "stderr: \(result.stderr)")
        #expect(result.stdoutLines.isEmpty)
        #expect(result.stderr.split(separator: "\n").last?.hasPrefix("Error: ") == true, "stderr: \(result.stderr)")
    }

    /// A parent may start a program with a standard stream closed (`2>&-`): writing to it is a reader that is gone,
    /// so the program ends with its own status instead of trapping on EBADF.
    /// (heraldd and herald-chat-server open nothing before they write, so the number stays closed there.)
    @Test(arguments: [
        ("heraldd", "--version >&-", 0),
        ("heraldd", "--no-such-option 2>&-", 64),
        ("herald-chat-server", "--version >&- 2>&-", 0),
        ("herald", "post 'a..b' >&- 2>&-", 64),
    ])
    func aClosedStandardStreamDoesNotChangeTheExitStatus(
        executable: String,
        arguments: String,
        status: Int
    ) async throws {
        let herald = TestBinaries.path(executable)
        // The status goes to a descriptor the command line leaves open, and the shell's own stdout is the pipe.
        let shell = try ChildProcess("/bin/sh", ["-c", "exec 3>&1; '\(herald)' \(arguments); echo \"status=$?\" >&3"])
        shell.closeStdin()
        #expect(try await shell.waitForExit(timeout: .seconds(20)) == 0)
        #expect(shell.stdout.split(separator: "\n").last == "status=\(status)", "stderr: \(shell.stderr)")
    }
}
