import HeraldTestSupport
import Testing

/// Every executable's `main.swift` goes through HeraldCommandLine's `runMain` or `parseOrExit`, so each answers
/// `--version` and a usage error the same way; herald-bench's `--version` once printed nothing.
@Suite struct ExecutableMainTests {
    @Test(arguments: ["heraldd", "herald", "herald-chat", "herald-chat-server", "herald-bench"])
    func versionPrintsTheNameAndVersionOnStdoutAndExitsZero(executable: String) async throws {
        let result = try await run(executable, ["--version"])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(result.stdoutLines == ["\(executable) 0.1.0"])
        #expect(result.stderr.isEmpty)
    }

    @Test(arguments: ["heraldd", "herald-chat", "herald-chat-server", "herald-bench"])
    func anUnknownOptionIsAUsageErrorOnStderrWithStatus64(executable: String) async throws {
        let result = try await run(executable, ["--no-such-option"])
        #expect(result.status == 64)
        #expect(result.stdoutLines.isEmpty)
        #expect(result.stderr.hasPrefix("Error: "), "stderr: \(result.stderr)")
        #expect(result.stderr.contains("--help"))
    }
}
