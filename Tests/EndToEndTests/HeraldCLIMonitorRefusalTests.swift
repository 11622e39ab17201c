import Foundation
import HeraldLaunch
import HeraldTestSupport
import Testing

/// `herald monitor` refused by the daemon. From a fresh connection the one refusal a `MONITOR` can meet is
/// `PERMISSION_DENIED`: the daemon's bounds start at 1 (`--max-subscriptions`, `--max-pattern-cost`), which a first
/// `MONITOR` (one subscription, cost 1) never passes, while the session's owner alone may monitor, not even root
/// (wire.md, `MONITOR`). So the daemon runs as uid 65534 and the monitor as root, which may connect but not monitor.
///
/// In version 2 that `ERROR` is a refusal (the connection goes on), in version 1 it is fatal: either way the command
/// must say why on stderr in one line, exit 1 at once (not wait out `--timeout`), print nothing on stdout, and leave
/// the daemon as it was.
@Suite(.serialized) struct HeraldCLIMonitorRefusalTests {
    static let isRoot = getuid() == 0

    @Test(
        .enabled(if: isRoot, "needs root: the daemon runs as uid 65534 and the refused monitor as root"),
        arguments: [2, 1]
    )
    func monitorRefusedForAnotherUidExitsWithTheReasonAndHarmsNothing(version: Int) async throws {
        let directory = TemporaryDirectory()
        // The daemon's user must be able to pass through the temporary directory to its own.
        #expect(chmod(directory.path, 0o711) == 0)
        let socketDirectory = directory.file("nobody")
        try FileManager.default.createDirectory(
            atPath: socketDirectory,
            withIntermediateDirectories: false,
            attributes: [.posixPermissions: 0o700]
        )
        #expect(chown(socketDirectory, 65534, 65534) == 0)
        let socket = socketDirectory + "/socket"
        let daemon = try ChildProcess(
            "/usr/bin/setpriv",
            [
                "--reuid=65534", "--regid=65534", "--clear-groups", TestBinaries.path("heraldd"), "--socket", socket,
                "--no-plugins", "--max-protocol-version", String(version),
            ]
        )
        defer { daemon.signal(SIGKILL) }
        try await daemon.waitForStderrLine(containing: "ready on")

        // A subscriber of root's, live before and after, to show the refusal costs nobody else anything.
        let observer = try ChildProcess(
            TestBinaries.path("herald"),
            ["observe", "after.**", "--json", "--ready", "--count", "1", "--socket", socket]
        )
        try await observer.waitForStderrLine(containing: "ready")
        let before = try await run("herald", ["status", "--json", "--socket", socket])
        #expect(before.status == 0, "\(before.stderr)")

        // --timeout 120 against run's 30 s: a monitor that waited for its timeout instead of exiting fails here.
        let monitor = try await run(
            "herald",
            ["monitor", "--json", "--ready", "--timeout", "120", "--socket", socket],
            timeout: .seconds(30)
        )
        #expect(monitor.status == 1, "\(monitor.stderr)")
        #expect(monitor.stdout.isEmpty, "herald monitor printed: \(monitor.stdout)")
        let lines = monitor.stderr.split(separator: "\n")
        #expect(
            lines.count == 1 && lines[0].hasPrefix("Error: ")
                && lines[0].contains("only uid 65534, the session's owner, may monitor"),
            "\(monitor.stderr)"
        )
        #expect(!monitor.stderr.contains("ready"), "announced ready though refused: \(monitor.stderr)")

        // The daemon goes on, with nothing of the refused monitor left: the same subscriptions as before, and the
        // other subscriber still gets what is posted.
        let after = try await run("herald", ["status", "--json", "--socket", socket])
        #expect(after.status == 0, "\(after.stderr)")
        #expect(Self.count("subscriptions", in: after.stdout) == Self.count("subscriptions", in: before.stdout))
        #expect(Self.count("subscriptions", in: after.stdout) != nil, "\(after.stdout)")
        #expect(try await run("herald", ["post", "after.refusal", "--socket", socket]).status == 0)
        #expect(try await observer.waitForExit() == 0)
        #expect(observer.stdout.contains(#""name":"after.refusal""#), "\(observer.stdout)")
        #expect(daemon.exitStatus == nil, "heraldd ended: \(daemon.stderr)")
    }

    /// The integer value of `key` in `herald status --json`'s object.
    static func count(_ key: String, in json: String) -> Int? {
        guard let data = json.data(using: .utf8),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { return nil }
        return (object[key] as? NSNumber)?.intValue
    }
}
