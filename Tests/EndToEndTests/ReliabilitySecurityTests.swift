import Foundation
import HeraldLaunch
import HeraldTestSupport
import HeraldWire
import Testing

/// Issue 3, point 6: only the owning uid (and root) may connect, monitoring is the owner's alone, and every limit
/// is an error rather than silent truncation.
struct ReliabilitySecurityTests {
    /// Runs `arguments` as uid/gid 65534, optionally with CAP_DAC_OVERRIDE so it can get past a 0700 directory: the
    /// daemon's own SO_PEERCRED check is then the only thing in the way.
    private func asNobody(_ arguments: [String], pastPermissions: Bool) -> [String] {
        var wrapper = ["--reuid=65534", "--regid=65534", "--clear-groups"]
        if pastPermissions {
            wrapper += ["--inh-caps=+dac_override,+dac_read_search", "--ambient-caps=+dac_override,+dac_read_search"]
        }
        return wrapper + arguments
    }

    @Test func anotherUidIsStoppedByTheDirectoryAndByTheDaemon() async throws {
        let daemon = try await TestDaemon.start()
        let herald = TestBinaries.path("herald")
        // The 0700 directory stops another user before the daemon does.
        let blocked = try ChildProcess(
            "/usr/bin/setpriv",
            asNobody([herald, "status", "--socket", daemon.socketPath], pastPermissions: false)
        )
        #expect(try await blocked.waitForExit() == 69)
        #expect(blocked.stderr.contains("Permission denied"), "stderr: \(blocked.stderr)")
        // Past the directory, the daemon's SO_PEERCRED check refuses the connection.
        let refused = try ChildProcess(
            "/usr/bin/setpriv",
            asNobody([herald, "status", "--socket", daemon.socketPath], pastPermissions: true)
        )
        #expect(try await refused.waitForExit() != 0)
        #expect(refused.stderr.contains("uid 65534 may not use this daemon"), "stderr: \(refused.stderr)")
        // Root may (system hooks post as root), and the daemon carries on.
        #expect(try await run("herald", ["post", "root.may", "--socket", daemon.socketPath]).status == 0)
    }

    @Test func onlyTheOwnerMayMonitorNotEvenRoot() async throws {
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
            asNobody([TestBinaries.path("heraldd"), "--socket", socket], pastPermissions: false)
        )
        try await daemon.waitForStderrLine(containing: "ready on")
        let monitor = try await run("herald", ["monitor", "--socket", socket, "--timeout", "5"])
        #expect(monitor.status == 1)
        #expect(monitor.stderr.contains("only uid 65534, the session's owner, may monitor"), "\(monitor.stderr)")
        // Root may still post to the session's daemon.
        #expect(try await run("herald", ["post", "from.root", "--socket", socket]).status == 0)
        daemon.signal(SIGTERM)
        _ = try await daemon.waitForExit()
    }

    @Test func theOwnerMonitorsEveryPostReadOnly() async throws {
        let daemon = try await TestDaemon.start()
        let monitor = try ChildProcess(
            TestBinaries.path("herald"),
            ["monitor", "--json", "--ready", "--count", "2"],
            environment: daemon.environment
        )
        try await monitor.waitForStderrLine(containing: "ready")
        #expect(try await run("herald", ["post", "any.thing"], environment: daemon.environment).status == 0)
        #expect(try await run("herald", ["post", "other"], environment: daemon.environment).status == 0)
        #expect(try await monitor.waitForExit() == 0)
        #expect(
            monitor.stdoutLines.map { $0.contains(#""name":"any.thing""#) || $0.contains(#""name":"other""#) } == [
                true, true,
            ]
        )
    }

    @Test func limitsConnectionsPerUidWithAnError() async throws {
        let daemon = try await TestDaemon.start(arguments: ["--max-connections", "3"])
        var held = try (0..<3).map { _ in try WireClient.ready(socketPath: daemon.socketPath) }
        let fourth = try WireClient(socketPath: daemon.socketPath)
        guard case .error(let error)? = try fourth.receive() else {
            Issue.record("the fourth connection was not refused")
            return
        }
        #expect(error.code == .tooManyConnections)
        #expect(try fourth.receive() == nil)
        // Closing one frees a place.
        held.removeLast()
        let again = try await eventuallyConnects(daemon.socketPath)
        #expect(again)
    }

    @Test func limitsPayloadsWithAnErrorNotTruncation() async throws {
        let daemon = try await TestDaemon.start(arguments: ["--max-payload", "100"])
        let client = try WireClient.ready(socketPath: daemon.socketPath)
        try client.send(.post(.init(request: 1, name: "big", payload: [UInt8](repeating: 1, count: 101))))
        guard case .error(let error)? = try client.receive() else {
            Issue.record("an oversized payload was not refused")
            return
        }
        #expect(error.code == .payloadTooLarge)
        #expect(error.reason == "payload of 101 bytes is over the limit of 100")
    }

    /// Connects and completes the handshake, retrying while the daemon still counts a closing connection: an attempt
    /// the daemon refuses (its ERROR, then a reset or EPIPE on the HELLO) means "not yet".
    private func eventuallyConnects(_ path: String) async throws -> Bool {
        try await eventuallySucceeds {
            let client = try WireClient(socketPath: path)
            try client.send(.hello(.init(client: "retry")))
            if case .welcome? = try client.receive() { return true }
            return false
        }
    }
}
