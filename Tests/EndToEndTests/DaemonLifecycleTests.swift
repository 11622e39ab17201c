import Foundation
import HeraldPosix
import HeraldTestSupport
import Testing

/// heraldd as a process: where it listens, what it refuses, how it stops.
struct DaemonLifecycleTests {
    @Test func refusesToTakeOverASocketALiveDaemonAnswersOn() async throws {
        let daemon = try await TestDaemon.start()
        let second = try await run("heraldd", ["--socket", daemon.socketPath])
        #expect(second.status == 1)
        #expect(second.stderr.contains("another heraldd is already running on \(daemon.socketPath)"))
        // The first daemon still serves.
        let client = try WireClient.ready(socketPath: daemon.socketPath)
        try client.post("still.here")
    }

    @Test func replacesAStaleSocketFile() async throws {
        let directory = TemporaryDirectory()
        // A socket file with nobody listening: what a crashed daemon leaves behind.
        var stale: FileDescriptor? = try UnixSocket.listen(path: directory.file("socket"))
        stale = nil
        _ = consume stale
        #expect(FileManager.default.fileExists(atPath: directory.file("socket")))
        // A process another test is spawning right now holds a copy of every descriptor, the listener included,
        // until it execs: the socket is dead once no copy is left, which takes at most that long.
        #expect(try await eventually { !UnixSocket.isAlive(path: directory.file("socket")) })
        let daemon = try await TestDaemon.start(directory: directory)
        let client = try WireClient.ready(socketPath: daemon.socketPath)
        try client.post("fresh.start")
    }

    @Test func refusesAFileInTheWayThatIsNotASocket() async throws {
        let directory = TemporaryDirectory()
        _ = FileManager.default.createFile(atPath: directory.file("socket"), contents: Data("precious".utf8))
        let result = try await run("heraldd", ["--socket", directory.file("socket")])
        #expect(result.status == 1)
        #expect(result.stderr.contains("not a socket"))
        #expect(FileManager.default.contents(atPath: directory.file("socket")) == Data("precious".utf8))
    }

    @Test func createsAMissingDirectoryWithMode0700() async throws {
        let directory = TemporaryDirectory()
        let daemon = try await TestDaemon.start(directory: directory, socketName: "run/herald/socket")
        let attributes = try FileManager.default.attributesOfItem(atPath: directory.file("run/herald"))
        #expect((attributes[.posixPermissions] as? Int) == 0o700)
        try WireClient.ready(socketPath: daemon.socketPath).post("in.new.directory")
    }

    @Test func refusesADirectoryWhoseModeIsNot0700() async throws {
        let directory = TemporaryDirectory()
        try FileManager.default.createDirectory(
            atPath: directory.file("open"),
            withIntermediateDirectories: false,
            attributes: [.posixPermissions: 0o755]
        )
        let result = try await run("heraldd", ["--socket", directory.file("open/socket")])
        #expect(result.status == 1)
        #expect(result.stderr.contains("0755"), "stderr: \(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: directory.file("open/socket")))
    }

    @Test(arguments: [SIGTERM, SIGINT])
    func stopsOnSignalRemovingTheSocketAndExitingZero(signal: Int32) async throws {
        let daemon = try await TestDaemon.start()
        let client = try WireClient.ready(socketPath: daemon.socketPath)
        #expect(try await daemon.stop(signal: signal) == 0)
        #expect(!FileManager.default.fileExists(atPath: daemon.socketPath))
        // Connected clients are told why the connection ends.
        let frame = try client.receive()
        guard case .error(let error) = frame else {
            Issue.record("expected a SHUTTING_DOWN error, got \(String(describing: frame))")
            return
        }
        #expect(error.code == .shuttingDown)
        #expect(try client.receive() == nil)
    }

    @Test func printsHelpAndVersion() async throws {
        let help = try await run("heraldd", ["--help"])
        #expect(help.status == 0)
        #expect(help.stdout.hasPrefix("OVERVIEW: "))
        #expect(help.stdout.contains("--queue-bytes <bytes>"))
        let version = try await run("heraldd", ["--version"])
        #expect(version.stdout == "heraldd 0.1.0\n")
        let bad = try await run("heraldd", ["--bogus"])
        #expect(bad.status == 64)
        #expect(bad.stderr.hasPrefix("Error: Unknown option '--bogus'"))
    }
}
