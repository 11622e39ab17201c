public import HeraldPosix

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

#if os(Linux)
/// A small, strict HTTP/1.1 server on one epoll loop (Linux only).
///
/// It keeps connections alive, reads `Content-Length` bodies, writes complete responses and never-ending chunked
/// streams, and enforces its ``Configuration``: the parser's head and body limits (431, 413), a read timeout for
/// each request (408, against slowloris), an idle timeout between requests, and a connection limit. A request that
/// cannot be framed is answered with a JSON error and the connection is closed gracefully: the write side is shut
/// and unread input is drained for a moment, so the client reads the answer instead of a reset.
///
/// Everything runs on the thread that calls ``run(handler:)``; the handler is called there, one event at
/// a time. Nothing here is thread-safe, by design.
public final class HTTPServer {
    /// The server's limits and timeouts.
    public struct Configuration: Sendable {
        /// The request parser's limits.
        public var limits = HTTPRequestParser.Limits()
        /// How long a request may take to arrive once it has started, and a new connection to send its first one.
        public var requestTimeout: Duration = .seconds(10)
        /// How long a kept-alive connection may sit between requests.
        public var idleTimeout: Duration = .seconds(60)
        /// How long a closing connection may take to flush its answer and drain its input.
        public var lingerTimeout: Duration = .seconds(2)
        /// The most connections at once; more are closed as soon as they are accepted.
        public var maximumConnections = 1024
        /// Where the server logs one line per notable event.
        public var logger = Logger.disabled

        /// The defaults: 10 s per request, 60 s idle, 2 s linger, 1024 connections, no logging.
        public init() {}
    }

    /// Identifies one connection for the handler.
    public struct ConnectionID: Hashable, Sendable, CustomStringConvertible {
        /// The server's number for it; never reused while the server runs.
        public let rawValue: UInt64

        /// Wraps a number the server handed out.
        public init(rawValue: UInt64) {
            self.rawValue = rawValue
        }

        public var description: String {
            "connection \(rawValue)"
        }
    }

    /// How the handler answers a request.
    public enum Reply: Sendable {
        /// A complete response.
        case response(HTTPResponse)
        /// The head of a chunked response whose body the handler sends as it goes.
        case stream(HTTPResponseHead)
    }

    /// The port the server listens on: the one asked for, or the one the kernel chose for port 0.
    public let port: UInt16
    /// The address the server listens on, as given.
    public let host: String

    let configuration: Configuration
    let listener: FileDescriptor
    var epoll: Epoll
    let signals: SignalFD
    var connections: [UInt64: Connection] = [:]
    /// Connections with output queued since they were last flushed.
    var needsFlush: Set<UInt64> = []
    var nextID: UInt64 = Token.firstConnection
    var handler: (any HTTPHandler)?
    var stopping = false

    /// The `data` words of the descriptors that are not connections.
    enum Token {
        static let listener: UInt64 = 0
        static let signals: UInt64 = 1
        static let firstConnection: UInt64 = 16
    }

    /// Binds and listens, and takes over `stopSignals`; nothing is accepted until ``run(handler:)``, but clients may
    /// already connect (they wait in the backlog), so announce readiness after this returns.
    ///
    /// The signals are blocked for the calling thread and read from a signalfd, so create the server on the main
    /// thread before starting other threads (see ``SignalFD/init(signals:)``).
    ///
    /// - Parameters:
    ///   - host: an IPv4 or IPv6 literal, or "localhost".
    ///   - port: the port; 0 lets the kernel choose (read ``port``).
    ///   - stopSignals: the signals that stop ``run(handler:)``, usually SIGINT and SIGTERM.
    /// - Throws: ``SystemError``, e.g. EADDRINUSE naming the address.
    public init(
        host: String,
        port: UInt16,
        stopSignals: [Int32],
        configuration: Configuration = Configuration()
    ) throws(SystemError) {
        self.configuration = configuration
        self.host = host
        listener = try TCPSocket.listen(host: host, port: port)
        self.port = try TCPSocket.localPort(of: listener)
        epoll = try Epoll()
        signals = try SignalFD(signals: stopSignals)
        try epoll.add(listener.rawValue, events: .readable, data: Token.listener)
        try epoll.add(signals.rawValue, events: .readable, data: Token.signals)
    }

    /// Runs the loop until one of the stop signals arrives; then ends every stream with its last chunk, closes every
    /// connection and returns.
    ///
    /// - Throws: ``SystemError`` when the loop itself fails (epoll, the signalfd); connection errors only close
    ///   their connection.
    public func run(handler: any HTTPHandler) throws(SystemError) {
        self.handler = handler
        defer { self.handler = nil }
        var events = [Epoll.Event](repeating: Epoll.Event(), count: 256)
        while !stopping {
            let timeout = waitTimeout()
            let count = try events.withUnsafeMutableBufferPointer { (buffer) throws(SystemError) in
                try epoll.wait(into: buffer, timeoutMilliseconds: timeout)
            }
            for event in events[..<count] {
                switch event.data {
                case Token.listener:
                    acceptConnections()
                case Token.signals:
                    while let signal = try signals.readSignal() {
                        configuration.logger.notice("stopping on signal \(signal)")
                        stopping = true
                    }
                default:
                    connectionReady(event.data, events: event.events)
                }
                flushPending()
            }
            checkDeadlines()
            flushPending()
        }
        shutDown()
    }

    // MARK: - What the handler calls

    /// Sends `bytes` as one chunk of `connection`'s stream. Ignored when the stream is gone (the handler may not have
    /// heard yet) or was finished.
    public func send(_ bytes: [UInt8], to connection: ConnectionID) {
        guard let entry = connections[connection.rawValue], entry.phase == .streaming, !bytes.isEmpty else {
            return
        }
        entry.queue(ChunkedEncoding.chunk(bytes), payload: bytes.count)
        needsFlush.insert(connection.rawValue)
    }

    /// Ends `connection`'s stream with the last chunk and closes the connection once it is written (or after the
    /// linger timeout, for a client that stopped reading). ``HTTPHandler/streamClosed(_:server:)`` is not called.
    public func finish(_ connection: ConnectionID) {
        guard let entry = connections[connection.rawValue], entry.phase == .streaming else {
            return
        }
        entry.queue(ChunkedEncoding.end, payload: 0)
        startClosing(entry)
        needsFlush.insert(connection.rawValue)
    }

    /// Bytes queued for `connection` and not yet written, framing included; nil if it is gone.
    public func queuedBytes(of connection: ConnectionID) -> Int? {
        connections[connection.rawValue]?.queuedBytes
    }

    /// The number of open connections.
    public var connectionCount: Int {
        connections.count
    }
}
#endif
