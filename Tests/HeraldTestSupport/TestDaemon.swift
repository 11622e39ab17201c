public import Foundation
public import HeraldLaunch

/// The real built `heraldd`, started on a socket in a fresh temporary directory. `start` returns once
/// the daemon has said it is ready, so the socket is accepting.
///
/// It starts the daemon through `LaunchedDaemon`, the same code `herald demo` uses.
public final class TestDaemon: Sendable {
    public let directory: TemporaryDirectory
    public let socketPath: String
    public let process: ChildProcess

    /// Starts heraldd with `--socket` in a new directory and `arguments`, and waits for its ready line.
    ///
    /// - Parameters:
    ///   - plugins: Whether the daemon reads plugin folders; by default it runs with `--no-plugins`, so no plugin
    ///     installed on the machine running the tests takes part. A test of plugins passes `true` and points
    ///     `XDG_CONFIG_HOME` and `XDG_DATA_DIRS` at folders of its own through `environment`.
    ///   - environment: Entries added to (or, with a nil value, removed from) the daemon's environment.
    /// - Throws: `ChildProcess.Timeout` if it does not become ready; the message has its stderr.
    public static func start(
        arguments: [String] = [],
        directory: TemporaryDirectory = TemporaryDirectory(),
        socketName: String = "socket",
        plugins: Bool = false,
        environment: [String: String?] = [:]
    ) async throws -> TestDaemon {
        let launched = try await LaunchedDaemon.start(
            Program(executable: TestBinaries.path("heraldd")),
            socketPath: directory.file(socketName),
            arguments: ["--log-level", "debug"] + (plugins ? [] : ["--no-plugins"]) + arguments,
            environment: environment
        )
        return TestDaemon(directory: directory, socketPath: launched.socketPath, process: launched.process)
    }

    private init(directory: TemporaryDirectory, socketPath: String, process: ChildProcess) {
        self.directory = directory
        self.socketPath = socketPath
        self.process = process
    }

    /// The daemon's process id.
    public var pid: Int32 { process.pid }

    /// Stops the daemon with `signal` and returns its exit status.
    @discardableResult
    public func stop(signal: Int32 = SIGTERM, timeout: Duration = .seconds(10)) async throws -> Int32 {
        process.signal(signal)
        return try await process.waitForExit(timeout: timeout)
    }

    /// The environment a client process needs to find this daemon without `--socket`.
    public var environment: [String: String?] { ["HERALD_SOCKET": socketPath] }

    deinit {
        process.signal(SIGKILL)
    }
}

/// Runs an executable to completion with a deadline and returns what it printed.
public struct CommandResult: Sendable {
    public var status: Int32
    public var stdout: String
    public var stderr: String

    public var stdoutLines: [String] { stdout.split(separator: "\n").map(String.init) }
}

/// Runs the built executable `name` with `arguments` and waits for it to exit.
///
/// - Throws: `ChildProcess.Timeout` if it runs past `timeout`.
public func run(
    _ name: String,
    _ arguments: [String],
    environment: [String: String?] = [:],
    stdin: String? = nil,
    timeout: Duration = .seconds(20)
) async throws -> CommandResult {
    let process = try ChildProcess(TestBinaries.path(name), arguments, environment: environment)
    if let stdin { process.writeStdin(stdin) }
    process.closeStdin()
    let status = try await process.waitForExit(timeout: timeout)
    return CommandResult(status: status, stdout: process.stdout, stderr: process.stderr)
}
