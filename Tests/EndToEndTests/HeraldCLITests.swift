import Foundation
import HeraldLaunch
import HeraldTestSupport
import Testing

/// Helpers for the `herald` CLI tests: running it against a test daemon and reading its JSON lines.
enum CLI {
    /// Runs `herald` with `arguments` against `daemon` and waits for it to exit.
    static func run(
        _ arguments: [String],
        daemon: TestDaemon,
        timeout: Duration = .seconds(20)
    ) async throws
        -> CommandResult
    {
        try await HeraldTestSupport.run("herald", arguments, environment: daemon.environment, timeout: timeout)
    }

    /// Starts `herald` with `arguments` against `daemon`, without waiting for it.
    static func start(_ arguments: [String], daemon: TestDaemon) throws -> ChildProcess {
        try ChildProcess(TestBinaries.path("herald"), arguments, environment: daemon.environment)
    }

    /// Starts `herald observe --ready …` (or `wait`) and returns once its subscriptions are acknowledged.
    static func startSubscribed(_ arguments: [String], daemon: TestDaemon) async throws -> ChildProcess {
        let process = try start(arguments + ["--ready"], daemon: daemon)
        try await process.waitForStderrLine(containing: "ready")
        return process
    }

    /// Posts with `herald post` and checks that it succeeded silently.
    static func post(
        _ arguments: [String],
        daemon: TestDaemon,
        sourceLocation: SourceLocation = #_sourceLocation
    )
        async throws
    {
        let result = try await run(["post"] + arguments, daemon: daemon)
        #expect(result.status == 0, "herald post \(arguments): \(result.stderr)", sourceLocation: sourceLocation)
        #expect(result.stdout.isEmpty, sourceLocation: sourceLocation)
        #expect(result.stderr.isEmpty, sourceLocation: sourceLocation)
    }

    /// Parses one line of `--json` output as an object.
    static func object(_ line: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> [String: Any] {
        let parsed = try JSONSerialization.jsonObject(with: Data(line.utf8), options: [.fragmentsAllowed])
        return try #require(parsed as? [String: Any], "not a JSON object: \(line)", sourceLocation: sourceLocation)
    }

    /// The `payload` member of a notification line, re-serialized with sorted keys so tests compare text.
    static func payloadText(_ object: [String: Any]) throws -> String? {
        guard let payload = object["payload"] else { return nil }
        let data = try JSONSerialization.data(
            withJSONObject: payload,
            options: [.sortedKeys, .fragmentsAllowed, .withoutEscapingSlashes]
        )
        return String(decoding: data, as: UTF8.self)
    }

    /// Whether `text` is an ISO 8601 UTC time with milliseconds, like `2026-11-23T10:15:30.123Z`.
    static func isISOTime(_ text: String) -> Bool {
        text.wholeMatch(of: /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z/) != nil
    }
}
