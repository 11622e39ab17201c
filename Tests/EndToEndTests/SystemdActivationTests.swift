import Foundation
import Herald
import HeraldLaunch
import HeraldPosix
import HeraldTestSupport
import Testing

/// heraldd under systemd: socket activation through the real systemd-socket-activate, and sd_notify readiness.
struct SystemdActivationTests {
    /// systemd-socket-activate listening on `socket`, ready to start heraldd on the first connection.
    private func activator(
        socket: String,
        extraListen: [String] = [],
        flags: [String] = [],
        environment: [String: String?]
    ) async throws -> ChildProcess {
        let passed = environment.keys.sorted().flatMap { ["-E", $0] }
        let process = try ChildProcess(
            try SessionTools.path("systemd-socket-activate"),
            ["-l", socket] + extraListen.flatMap { ["-l", $0] } + flags + passed
                + [TestBinaries.path("heraldd"), "--log-level", "debug"],
            environment: environment
        )
        try await process.waitForStderrLine(containing: "Listening on \(socket)")
        return process
    }

    @Test(.requires("systemd-socket-activate")) func aPostMadeBeforeTheDaemonStartedIsDeliveredThroughThePassedSocket()
        async throws
    {
        let directory = TemporaryDirectory()
        let socket = directory.file("socket")
        let notify = try SystemdNotifySocket(address: "@herald-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        let activator = try await activator(
            socket: socket,
            environment: ["HERALD_SOCKET": socket, "NOTIFY_SOCKET": notify.address]
        )
        // systemd bound the socket; no heraldd runs yet.
        #expect(FileManager.default.fileExists(atPath: socket))
        #expect(!activator.stderr.contains("Execing"))
        #expect(!activator.stderr.contains("ready on"))

        // This client connects, sends HELLO and a retained POST into the backlog, and is acknowledged once the
        // daemon, started by this very connection, reads it.
        let client = try await Herald.connect(socketPath: socket)
        let sequence = try await client.postAcknowledged(
            "session.state",
            payload: Array(#"{"state":"away"}"#.utf8),
            retain: true
        )
        #expect(sequence >= 1)
        try await activator.waitForStderrLine(containing: "ready on \(socket) (pid \(activator.pid))")
        #expect(activator.stderr.contains("using the listening socket systemd passed for \(socket)"))

        let ready = notify.receive()
        #expect(ready?.contains("READY=1\n") == true, "got \(ready ?? "nothing")")
        #expect(ready?.contains("STATUS=Listening on \(socket)\n") == true)

        // A second client, connected after the daemon started, reads the retained value.
        let reader = try await Herald.connect(socketPath: socket)
        let retained = try await reader.retainedValue(of: "session.state")
        #expect(retained?.userInfo?["state"]?.stringValue == "away")
        await reader.close()
        await client.close()

        activator.signal(SIGTERM)
        let stopping = notify.receive()
        #expect(stopping?.contains("STOPPING=1\n") == true, "got \(stopping ?? "nothing")")
        #expect(try await activator.waitForExit() == 0)
        // The socket is systemd's: heraldd leaves it in place for the next activation.
        #expect(FileManager.default.fileExists(atPath: socket))
    }

    @Test func notifiesReadinessToAPathNotifySocketWhenStartedByHand() async throws {
        let directory = TemporaryDirectory()
        let notify = try SystemdNotifySocket(address: directory.file("notify"))
        let daemon = try ChildProcess(
            TestBinaries.path("heraldd"),
            ["--socket", directory.file("socket")],
            environment: ["NOTIFY_SOCKET": notify.address, "HERALD_SOCKET": nil]
        )
        try await daemon.waitForStderrLine(containing: "ready on \(directory.file("socket"))")
        #expect(notify.receive()?.hasPrefix("READY=1\n") == true)
        daemon.signal(SIGTERM)
        #expect(notify.receive()?.hasPrefix("STOPPING=1\n") == true)
        #expect(try await daemon.waitForExit() == 0)
        // Not socket-activated: heraldd bound the socket, so it removes it.
        #expect(!FileManager.default.fileExists(atPath: directory.file("socket")))
    }

    @Test(.requires("systemd-socket-activate"))
    func servesASocketBoundElsewhereThanClientsLookAndSaysWhichHeraldSocketToUse() async throws {
        let directory = TemporaryDirectory()
        let socket = directory.file("other")
        // No --socket and no HERALD_SOCKET: clients would look in $XDG_RUNTIME_DIR/herald/socket.
        let runtime = directory.file("runtime")
        try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: false)
        let activator = try await activator(
            socket: socket,
            environment: ["XDG_RUNTIME_DIR": runtime, "HERALD_SOCKET": nil]
        )
        // The first client is the one that triggers the activation: its post must succeed.
        let first = try await run("herald", ["post", "--socket", socket, "activation.first"])
        #expect(first.status == 0, "\(first.stderr)")
        let warning = try await activator.waitForStderrLine(containing: "systemd passed a socket bound to \(socket)")
        #expect(warning.contains("clients look for \(runtime)/herald/socket by default"))
        #expect(warning.contains("HERALD_SOCKET=\(socket)"))
        try await activator.waitForStderrLine(containing: "ready on \(socket)")

        // A later observer on that path sees later posts.
        let observer = try ChildProcess(
            TestBinaries.path("herald"),
            ["observe", "activation.*", "--count", "1", "--ready"],
            environment: ["HERALD_SOCKET": socket]
        )
        try await observer.waitForStderrLine(containing: "ready")
        let second = try await run(
            "herald",
            ["post", "activation.second", "n=2"],
            environment: ["HERALD_SOCKET": socket]
        )
        #expect(second.status == 0, "\(second.stderr)")
        #expect(try await observer.waitForExit() == 0)
        #expect(observer.stdout.contains("activation.second"))
        #expect(!observer.stdout.contains("activation.first"))
        activator.signal(SIGTERM)
        #expect(try await activator.waitForExit() == 0)
    }

    @Test(.requires("systemd-socket-activate")) func refusesMoreThanOnePassedSocket() async throws {
        let directory = TemporaryDirectory()
        let activator = try await activator(
            socket: directory.file("socket"),
            extraListen: [directory.file("second")],
            environment: ["HERALD_SOCKET": directory.file("socket")]
        )
        _ = try? UnixSocket.connect(path: directory.file("socket"))
        #expect(try await activator.waitForExit() == 1)
        #expect(activator.stderr.contains("systemd passed 2 sockets (LISTEN_FDS=2)"))
    }

    @Test(.requires("systemd-socket-activate")) func refusesAPassedDatagramSocket() async throws {
        let directory = TemporaryDirectory()
        let activator = try await activator(
            socket: directory.file("socket"),
            flags: ["--datagram"],
            environment: ["HERALD_SOCKET": directory.file("socket")]
        )
        // A datagram wakes systemd-socket-activate, which then starts heraldd with the datagram socket as fd 3.
        try SystemdNotifier(address: directory.file("socket"))!.notify([("wake", "up")])
        #expect(try await activator.waitForExit() == 1)
        #expect(activator.stderr.contains("is not a listening Unix stream socket"))
    }

    @Test(
        arguments: [
            ([:], SystemdActivation.Decision.notActivated),
            (["LISTEN_PID": "42", "LISTEN_FDS": "1"], .listeningSocket),
            (["LISTEN_PID": "41", "LISTEN_FDS": "1"], .notActivated),
            (["LISTEN_PID": "42", "LISTEN_FDS": "0"], .notActivated),
            (["LISTEN_PID": "42", "LISTEN_FDS": "3"], .invalid("")),
            (["LISTEN_PID": "x", "LISTEN_FDS": "1"], .invalid("")),
            (["LISTEN_PID": "42"], .invalid("")),
        ] as [([String: String], SystemdActivation.Decision)]
    )
    func decidesFromTheEnvironmentAsSdListenFdsDoes(environment: [String: String], expected: SystemdActivation.Decision)
    {
        let decision = SystemdActivation.decide(environment: environment, pid: 42)
        switch (decision, expected) {
        case (.invalid(let message), .invalid):
            #expect(!message.isEmpty)
        default:
            #expect(decision == expected)
        }
    }

    @Test(arguments: ["/run/user/1000/systemd/notify", "@/org/freedesktop/systemd1/notify"])
    func acceptsPathAndAbstractNotifyAddresses(address: String) {
        #expect(SystemdNotifier(address: address)?.address == address)
    }

    @Test(arguments: ["", "relative/notify", "@"])
    func ignoresNotifyAddressesSdNotifyIgnores(address: String) {
        #expect(SystemdNotifier(address: address) == nil)
    }
}
