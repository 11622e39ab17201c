public import HeraldPosix

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

#if os(Linux)
/// A small, strict HTTP/1.1 server on an ``EventLoop`` (Linux only).
///
/// It keeps connections alive, reads `Content-Length` bodies, writes complete responses and never-ending chunked
/// streams, and enforces its ``Configuration``: the parser's head and body limits (431, 413), a read timeout for
/// each request (408, against slowloris), an idle timeout between requests, and connection limits. A request that
/// cannot be framed is answered with a JSON error and the connection is closed gracefully: the write side is shut
/// and unread input is drained for a moment, so the client reads the answer instead of a reset.
///
/// Streams and requests have limits of their own, so that neither can lock the other out. Streams past
/// ``Configuration/maximumStreams`` are answered 503. Request connections (reading a request, idle between two, or
/// closing) past ``Configuration/maximumRequestConnections``, or a descriptor shortage (EMFILE), make room by closing
/// the connection that has waited longest: a closing one first, then an idle one, then the oldest unfinished request
/// (once older than ``Configuration/evictionGrace``), so a slowloris's many slow heads go before a newcomer that
/// sends its request at once. When nothing can be closed, accepting pauses for ``Configuration/acceptPause`` or until
/// a connection closes, and newcomers wait in the listen backlog, instead of the loop spinning on a listener that
/// stays readable.
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
        /// The most streams at once; a request for one more is answered 503 Service Unavailable and its connection
        /// closed. Streams do not count against ``maximumRequestConnections``.
        public var maximumStreams = 1024
        /// The most connections that are not streams at once; accepting one more closes the one that has waited
        /// longest (closing, then idle, then the oldest unfinished request).
        public var maximumRequestConnections = 1024
        /// How long accepting pauses when no connection can be closed to make room for one more (out of descriptors,
        /// or at ``maximumRequestConnections`` with only new requests), unless a connection closes sooner.
        public var acceptPause: Duration = .milliseconds(100)
        /// How long a new request is safe from being closed to make room: long enough for a client that sends its
        /// request at once to have it read, short enough that a flood of new connections cannot hold every slot.
        public var evictionGrace: Duration = .milliseconds(250)
        /// The kernel's send buffer of a stream's socket, set when the stream starts (Linux reserves twice this);
        /// nil leaves the kernel to grow it, up to 4 MiB by default. What a stream's client leaves unread waits
        /// first in the kernel, then in the server's queue (``queuedBytes(of:)``), which a handler bounds: a small
        /// buffer bounds the first part too, and lets the handler see a client that stopped reading after
        /// kilobytes instead of megabytes.
        public var streamSendBuffer: Int? = 64 * 1024
        /// Where the server logs one line per notable event.
        public var logger = Logger.disabled

        /// The defaults: 10 s per request, 60 s idle, 2 s linger, 1024 streams and 1024 request connections, a
        /// 100 ms accept pause, a 250 ms eviction grace, a stream's send buffer of 64 KiB, no logging.
        public init() {}
    }

    /// What the server has done since it started: counts for logs and tests.
    public struct Statistics: Sendable, Equatable {
        /// Connections accepted.
        public var acceptedConnections = 0
        /// Request connections closed to make room for a new one (the limit, or out of descriptors).
        public var evictedConnections = 0
        /// Stream requests answered 503 at ``Configuration/maximumStreams``.
        public var refusedStreams = 0
        /// Times accepting paused for want of descriptors.
        public var acceptPauses = 0
        /// Chunks encoded by `send(_:to:)`: one per call, however many streams it reaches.
        public var chunksEncoded = 0
        /// Write system calls on connections.
        public var socketWrites = 0
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
    /// The listener, the connections, the stop signals and one timer at the earliest deadline.
    var loop: EventLoop<Handler>
    /// The loop's timer for the earliest deadline, and that deadline.
    var deadlineTimer: (id: TimerID, deadline: UInt64)?
    var connections: [UInt64: Connection] = [:]
    /// Connections with output queued since they were last flushed.
    var needsFlush: Set<UInt64> = []
    /// How many of `connections` are streaming; the others are request connections.
    var streamCount = 0
    /// The request, idle and linger deadlines, each in the order they fall.
    var requestDeadlines = DeadlineQueue()
    var idleDeadlines = DeadlineQueue()
    var lingerDeadlines = DeadlineQueue()
    /// When accepting resumes, while it is paused for want of descriptors.
    var acceptPausedUntil: UInt64?
    /// When the last warning of each kind of pressure was logged, so an attack does not flood the log.
    var lastPressureWarnings: [Pressure: UInt64] = [:]
    /// One read buffer for every connection: reads happen one at a time.
    var readBuffer = [UInt8](repeating: 0, count: 16 * 1024)
    /// What the server has done so far.
    public internal(set) var statistics = Statistics()
    var nextID: UInt64 = 1
    var handler: (any HTTPHandler)?
    var stopping = false

    /// What each registration and timer of the loop is for.
    enum Handler {
        case listener
        case connection(UInt64)
        /// The earliest deadline (``scheduleDeadlineTimer()``).
        case deadlines
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
        loop = try EventLoop(signals: stopSignals)
        try loop.register(listener.rawValue, interest: .readable, handler: .listener)
    }

    /// Runs the loop until one of the stop signals arrives; then ends every stream with its last chunk, closes every
    /// connection and returns.
    ///
    /// - Throws: ``SystemError`` when the loop itself fails (epoll, the signalfd); connection errors only close
    ///   their connection.
    public func run(handler: any HTTPHandler) throws(SystemError) {
        self.handler = handler
        defer { self.handler = nil }
        while !stopping {
            scheduleDeadlineTimer()
            let count = try loop.wait()
            for index in 0..<count {
                switch loop.event(at: index) {
                case .ready(.listener, _):
                    acceptConnections()
                case .ready(.connection(let id), let events):
                    connectionReady(id, events: events)
                case .signal(let signal):
                    configuration.logger.notice("stopping on signal \(signal)")
                    stopping = true
                case .timer(.deadlines):
                    // checkDeadlines below acts on every deadline due; the next wait gets a new timer.
                    deadlineTimer = nil
                case .ready(.deadlines, _), .timer, .wakeup, nil:
                    break
                }
            }
            // Once per turn, not per event: a burst of joins queues several lines per stream, and each stream gets
            // them in one write.
            checkDeadlines()
            flushPending()
        }
        shutDown()
    }

    // MARK: - What the handler calls

    /// Sends `bytes` as one chunk of `connection`'s stream. Ignored when the stream is gone (the handler may not have
    /// heard yet) or was finished.
    public func send(_ bytes: [UInt8], to connection: ConnectionID) {
        send(bytes, to: [connection])
    }

    /// Sends `bytes` as one chunk of each of `streams`, skipping those that are gone or finished.
    ///
    /// The chunk is encoded once and shared by every stream's queue, so each stream costs O(1) here, whatever the
    /// size of the chunk.
    public func send(_ bytes: [UInt8], to streams: [ConnectionID]) {
        guard !bytes.isEmpty, !streams.isEmpty else {
            return
        }
        let chunk = ChunkedEncoding.chunk(bytes)
        statistics.chunksEncoded += 1
        for stream in streams {
            guard let entry = connections[stream.rawValue], entry.phase == .streaming else {
                continue
            }
            entry.queue(chunk, payload: bytes.count)
            needsFlush.insert(stream.rawValue)
        }
    }

    /// Ends `connection`'s stream with the last chunk and closes the connection once it is written (or after the
    /// linger timeout, for a client that stopped reading). ``HTTPHandler/streamClosed(_:server:)`` is not called.
    public func finish(_ connection: ConnectionID) {
        guard let entry = connections[connection.rawValue], entry.phase == .streaming else {
            return
        }
        entry.queue(ChunkedEncoding.end, payload: 0)
        streamCount -= 1
        startClosing(entry)
        needsFlush.insert(connection.rawValue)
    }

    /// Ends `connection`'s stream now, for a client too slow to read it: the chunks queued and not yet started are
    /// discarded, so they free their memory at once, and `bytes` follows what has been written as the stream's last
    /// chunk, then its end; the connection closes once that is written (or after the linger timeout).
    /// ``HTTPHandler/streamClosed(_:server:)`` is not called. Ignored when the stream is gone or finished.
    ///
    /// A chunk already partly written is completed first, so the client still reads a well-formed chunked body.
    public func abandon(_ connection: ConnectionID, lastChunk bytes: [UInt8]) {
        guard let entry = connections[connection.rawValue], entry.phase == .streaming else {
            return
        }
        let kept = entry.offset > 0 ? Array(entry.output.prefix(1)) : []
        entry.output = kept
        entry.queuedBytes = kept.first.map { $0.bytes.count - entry.offset } ?? 0
        entry.queue(ChunkedEncoding.chunk(bytes), payload: 0)
        finish(connection)
    }

    /// The numeric address the connection comes from ("127.0.0.1", "::1"); nil if it is gone or was unknown.
    public func peerAddress(of connection: ConnectionID) -> String? {
        guard let peer = connections[connection.rawValue]?.peer, !peer.isEmpty else {
            return nil
        }
        return peer
    }

    /// Bytes queued for `connection` and not yet written, framing included; nil if it is gone.
    public func queuedBytes(of connection: ConnectionID) -> Int? {
        connections[connection.rawValue]?.queuedBytes
    }

    /// The number of open connections, streams included.
    public var connectionCount: Int {
        connections.count
    }

    /// The number of open streams.
    public var streamConnectionCount: Int {
        streamCount
    }
}
#endif
