import Foundation

/// heraldd started as a child process on a given socket, and ready to accept.
///
/// This is the one way a daemon is started for someone else's use: the end-to-end tests start the built `heraldd`
/// with it, and `herald demo` starts its own binary's hidden daemon role with it. ``start(_:socketPath:arguments:environment:timeout:)``
/// returns only after the daemon has said "ready on", which it says once its socket is listening.
public final class LaunchedDaemon: Sendable {
    /// The socket the daemon listens on.
    public let socketPath: String
    /// The daemon's process.
    public let process: ChildProcess

    private init(socketPath: String, process: ChildProcess) {
        self.socketPath = socketPath
        self.process = process
    }

    /// Starts `program` as heraldd on `socketPath` and waits until it is ready.
    ///
    /// `HERALD_SOCKET` is removed from the child's environment, so only `--socket` decides where it listens.
    ///
    /// - Parameters:
    ///   - program: The daemon's executable, or `herald`'s hidden daemon role.
    ///   - socketPath: The socket to listen on, passed as `--socket`.
    ///   - arguments: More of heraldd's options.
    ///   - environment: Entries added to (or, with a nil value, removed from) the child's environment.
    ///   - timeout: How long to wait for the ready line.
    /// - Throws: `ChildProcess.Timeout` with the daemon's stderr if it exits or stays silent past `timeout`
    ///   (the daemon is then killed), `CancellationError`, or the error of starting the process.
    public static func start(
        _ program: Program,
        socketPath: String,
        arguments: [String] = [],
        environment: [String: String?] = [:],
        timeout: Duration = .seconds(20)
    ) async throws -> LaunchedDaemon {
        var environment = environment
        environment["HERALD_SOCKET"] = .some(nil)
        let process = try ChildProcess(
            program.executable,
            program.leadingArguments + ["--socket", socketPath] + arguments,
            environment: environment
        )
        do {
            try await process.waitForStderrLine(containing: "ready on", timeout: timeout)
        } catch {
            process.signal(SIGKILL)
            throw error
        }
        return LaunchedDaemon(socketPath: socketPath, process: process)
    }

    /// The daemon's process id.
    public var pid: Int32 { process.pid }

    /// Stops the daemon with `signal` and returns its exit status.
    ///
    /// - Throws: `ChildProcess.Timeout` if it is still running after `timeout`.
    @discardableResult
    public func stop(signal: Int32, timeout: Duration = .seconds(10)) async throws -> Int32 {
        process.signal(signal)
        return try await process.waitForExit(timeout: timeout)
    }
}
