import ChatCore
import HeraldCommandLine
import HeraldHTTP
import HeraldPosix

#if canImport(Glibc)
import Glibc
#endif

/// herald-chat-server's whole life as a function: parse the command line, listen, run the loop until SIGTERM or
/// SIGINT, and end the process.
///
/// `herald-chat-server`'s `main.swift` calls it, and so does `herald demo`'s hidden chat-server role.
///
/// Exit codes: 0 after a clean stop, 1 when it cannot listen, 64 for a usage error.
public enum ChatServerMain {
    /// Runs the chat server with `arguments` (without the program name) and exits the process, through
    /// HeraldCommandLine's `runBlockingMain` (runMain for a loop that blocks the main thread and reads signals from
    /// a signalfd), as every Herald executable: `--help` and `--version` on stdout, a usage error on stderr with 64,
    /// and `Error: ...` with 1 when it cannot listen.
    ///
    /// - Parameter arguments: The command line after the program name.
    public static func run(arguments: [String]) -> Never {
        runBlockingMain(
            ServerOptions.spec,
            version: "herald-chat-server \(ServerOptions.version)",
            arguments: arguments,
            options: { parsed throws(UsageError) in try ServerOptions(parsed) },
            run: serve
        )
    }

    /// Listens and serves until SIGTERM or SIGINT. (runMain ignores SIGPIPE first: logging to a closed stderr must
    /// not kill the server; sockets use MSG_NOSIGNAL on their own.)
    private static func serve(_ options: ServerOptions) throws(CommandFailure) -> ExitCode {
        let logger = Logger(label: "herald-chat-server", level: options.logLevel)
        do {
            var configuration = HTTPServer.Configuration()
            configuration.logger = logger
            let descriptors = (try? DescriptorLimit.raiseSoftToHard())?.softCount
            let limits = connectionLimits(options, descriptorLimit: descriptors)
            configuration.maximumStreams = limits.streams
            configuration.maximumRequestConnections = limits.requests
            configuration.requestTimeout = options.requestTimeout
            if let descriptors, limits.streams + limits.requests + reservedDescriptors > descriptors {
                logger.warning(
                    "\(limits.streams) listeners and \(limits.requests) requests may need more descriptors than the "
                        + "limit of \(descriptors); past it, the longest-waiting requests are closed to make room"
                )
            }
            let server = try HTTPServer(
                host: options.host,
                port: options.port,
                stopSignals: [SIGINT, SIGTERM],
                configuration: configuration
            )
            var roomConfiguration = Room.Configuration()
            roomConfiguration.historyCapacity = options.history
            let chat = ChatServer(
                room: Room(configuration: roomConfiguration),
                bot: options.bot ? Bot() : nil,
                logger: logger
            )
            let shownHost = server.host.contains(":") ? "[\(server.host)]" : server.host
            logger.notice(
                "listening on http://\(shownHost):\(server.port) (pid \(ProcessIdentity.currentPID()); "
                    + "at most \(limits.streams) listeners and \(limits.requests) other connections)"
            )
            try server.run(handler: chat)
            let done = server.statistics
            logger.notice(
                "stopped: accepted \(done.acceptedConnections) connections, closed \(done.evictedConnections) to make "
                    + "room, refused \(done.refusedStreams) listeners, paused accepting \(done.acceptPauses) times; "
                    + "\(done.chunksEncoded) chunks encoded, \(done.socketWrites) socket writes"
            )
            return .success
        } catch {
            throw .failure("\(error)")
        }
    }

    /// Descriptors kept for everything but connections: the standard streams, the listener, epoll, the signalfd,
    /// and Foundation's own.
    static let reservedDescriptors = 64

    /// The listener and request limits: the options', or defaults that fit the descriptor limit, so that the limits
    /// are reached before the process runs out of descriptors.
    static func connectionLimits(_ options: ServerOptions, descriptorLimit: Int?) -> (streams: Int, requests: Int) {
        let available = max((descriptorLimit ?? 1_024) - reservedDescriptors, 64)
        let streams = options.maxListeners ?? min(1_024, max(available / 4, 16))
        let requests = options.maxRequests ?? min(4_096, max(available / 2, 32))
        return (streams, requests)
    }
}
