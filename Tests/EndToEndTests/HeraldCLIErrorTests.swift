import Foundation
import HeraldLaunch
import HeraldTestSupport
import Testing

/// Help, usage errors, exit statuses, and how `herald` ends when the daemon, a signal or the reader stops it.
@Suite struct HeraldCLIErrorTests {
    /// A socket path where nothing listens: command lines that are checked before connecting must fail with 64,
    /// not with 69 from trying.
    private static let nowhere: [String: String?] = ["HERALD_SOCKET": "/nonexistent/herald/socket"]

    @Test(arguments: [
        ["--help"], ["-h"], ["help"], [], ["help", "observe"], ["post", "--help"], ["observe", "session.*", "-h"],
        ["wait", "--help"], ["get", "--help"], ["status", "--help"],
    ])
    func helpGoesToStdoutAndExitsZero(arguments: [String]) async throws {
        let result = try await run("herald", arguments, environment: Self.nowhere)
        #expect(result.status == 0)
        #expect(result.stdout.contains("USAGE: herald"))
        #expect(result.stdout.contains("OPTIONS:"))
        #expect(result.stderr.isEmpty)
    }

    @Test func versionPrintsTheVersion() async throws {
        let result = try await run("herald", ["--version"], environment: Self.nowhere)
        #expect(result.status == 0)
        #expect(result.stdout == "herald 0.1.0\n")
    }

    @Test(arguments: [
        (["post", "a..b"], #"Error: invalid name "a..b": empty segment at byte 2"#),
        (["post", "herald.dropped"], #"Error: invalid name "herald.dropped""#),
        (["post", "x", "--json", "[1]"], "Error: The value of '--json' must be a JSON object, not an array"),
        (["post", "x", "--json", "{nope"], "Error: The value of '--json' is not valid JSON"),
        (["post", "x", "a=b", "--json", "{}"], "Error: Give the payload either as KEY=VALUE pairs or with '--json'"),
        (["post", "x", "novalue"], "Error: Expected KEY=VALUE with a non-empty KEY, got 'novalue'"),
        (["observe", "a.**.b"], #"Error: invalid pattern "a.**.b": '**' is allowed only as the last segment"#),
        (["observe"], "Error: Missing expected argument '<patterns> ...'"),
        (["observe", "x", "--count", "0"], "Error: The value '0' is invalid for '--count <n>'"),
        (["observe", "x", "--timeout", "soon"], "Error: The value 'soon' is invalid for '--timeout <seconds>'"),
        (["wait", "a.*"], #"Error: invalid name "a.*""#),
        (["get", ".a"], #"Error: invalid name ".a": empty segment at byte 0"#),
        (["status", "extra"], "Error: Unexpected argument 'extra'"),
        (["frobnicate"], "Error: Unexpected argument 'frobnicate'"),
        (["post", "x", "--bogus"], "Error: Unknown option '--bogus'"),
    ])
    func usageErrorsGoToStderrAndExit64(arguments: [String], message: String) async throws {
        let result = try await run("herald", arguments, environment: Self.nowhere)
        #expect(result.status == 64)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.hasPrefix(message), "stderr: \(result.stderr)")
        #expect(result.stderr.contains("Usage: herald"))
    }

    @Test(arguments: [["post", "x"], ["observe", "x"], ["wait", "x"], ["get", "x"], ["status"]])
    func aMissingDaemonExits69SayingHowToStartIt(arguments: [String]) async throws {
        let directory = TemporaryDirectory()
        let result = try await run("herald", arguments + ["--socket", directory.file("socket")])
        #expect(result.status == 69)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.hasPrefix("Error: "))
        #expect(result.stderr.contains("heraldd"))
        #expect(result.stderr.contains(directory.file("socket")))
    }

    @Test func observeExits69WhenTheDaemonGoesAway() async throws {
        let daemon = try await TestDaemon.start()
        let observer = try await CLI.startSubscribed(["observe", "session.*"], daemon: daemon)

        try await daemon.stop(signal: SIGTERM)

        #expect(try await observer.waitForExit() == 69)
        #expect(observer.stderr.hasPrefix("ready\nError: heraldd went away: "), "stderr: \(observer.stderr)")
    }

    @Test(arguments: [(SIGINT, 130), (SIGTERM, 143)] as [(Int32, Int32)])
    func observeExitsQuietlyOnASignal(signal: Int32, status: Int32) async throws {
        let daemon = try await TestDaemon.start()
        let observer = try await CLI.startSubscribed(["observe", "session.*"], daemon: daemon)

        observer.signal(signal)

        #expect(try await observer.waitForExit() == status)
        #expect(observer.stdout.isEmpty)
        #expect(observer.stderr == "ready\n")
    }

    @Test func observeExitsZeroWhenItsReaderGoesAway() async throws {
        let daemon = try await TestDaemon.start()
        // `herald observe ... | head -c 1`, with observe's own status said on stderr: head reads one byte and exits,
        // and observe's next write finds the reader gone (EPIPE) and must end observe with 0.
        let herald = TestBinaries.path("herald")
        let pipeline = try ChildProcess(
            "/bin/sh",
            ["-c", "{ '\(herald)' observe --ready 'pipe.*'; echo \"observe=$?\" >&2; } | head -c 1 >/dev/null"],
            environment: daemon.environment
        )
        try await pipeline.waitForStderrLine(containing: "ready")
        try await CLI.post(["pipe.first"], daemon: daemon)
        // Observe learns the reader is gone only when it next writes.
        try await CLI.post(["pipe.second"], daemon: daemon)
        let said = try await pipeline.waitForStderrLine(containing: "observe=")
        #expect(said == "observe=0", "observe should exit 0 after EPIPE: \(pipeline.stderr)")
        #expect(try await pipeline.waitForExit() == 0)
    }
}
