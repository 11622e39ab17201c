import Foundation
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
        // Like `herald observe ... | head -1`: read a line, close the pipe, and the next write must end observe.
        let process = Process()
        process.executableURL = URL(fileURLWithPath: TestBinaries.path("herald"))
        process.arguments = ["observe", "--ready", "pipe.*"]
        process.environment = ProcessInfo.processInfo.environment.merging(["HERALD_SOCKET": daemon.socketPath]) { $1 }
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        let (exits, exited) = AsyncStream.makeStream(of: Int32.self)
        process.terminationHandler = { process in
            exited.yield(process.terminationReason == .exit ? process.terminationStatus : -process.terminationStatus)
            exited.finish()
        }
        try process.run()
        defer { if process.isRunning { process.terminate() } }
        try? output.fileHandleForWriting.close()
        try? errors.fileHandleForWriting.close()

        let ready = try errors.fileHandleForReading.read(upToCount: 6)
        #expect(ready.map { String(decoding: $0, as: UTF8.self) } == "ready\n")
        try await CLI.post(["pipe.first"], daemon: daemon)
        let first = try output.fileHandleForReading.read(upToCount: 1)
        #expect(first?.isEmpty == false)
        try output.fileHandleForReading.close()

        // Observe learns the reader is gone only when it next writes.
        try await CLI.post(["pipe.second"], daemon: daemon)
        let status = try await withThrowingTaskGroup(of: Int32?.self) { group in
            group.addTask { await exits.first { _ in true } }
            group.addTask {
                try await Task.sleep(for: .seconds(20))
                return nil
            }
            defer { group.cancelAll() }
            return try await group.next() ?? nil
        }
        #expect(status == 0, "observe should exit 0 after EPIPE; it ended with \(String(describing: status))")
    }
}
