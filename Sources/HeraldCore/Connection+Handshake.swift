import HeraldPosix
import HeraldWire

extension Connection {
    /// Connects to the daemon at `socketPath`, completes `HELLO`/`WELCOME`, and starts the reader thread.
    ///
    /// The connect(2) and the handshake run on the connection's own reader thread, which then goes on reading: the
    /// calling task only suspends. They block that thread, bounded by `requestTimeout` per read and write
    /// (`SO_RCVTIMEO`, `SO_SNDTIMEO`), never a thread of the cooperative pool, which on Linux has only as many threads
    /// as cores: two apps connecting to a daemon slow to answer would otherwise stall every task of the process.
    ///
    /// - Throws: `.daemonUnavailable` when nothing listens on the path, `.timedOut`, `.daemonError` for an `ERROR`
    ///   (`PERMISSION_DENIED`, `UNSUPPORTED_VERSION`), `.disconnected` when the daemon is shutting down.
    static func open(
        socketPath: String,
        options: Herald.Options,
        executor: ReaderExecutor
    ) async throws(HeraldError) -> Connection {
        typealias Opened = CheckedContinuation<Result<Connection, HeraldError>, Never>
        let cancellation = HandshakeCancellation()
        let opened = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: Opened) in
                start(socketPath: socketPath, options: options, executor: executor, cancellation, continuation)
            }
        } onCancel: {
            cancellation.cancel()
        }
        return try opened.get()
    }

    /// Starts the thread that connects, then reads the connection.
    private static func start(
        socketPath: String,
        options: Herald.Options,
        executor: ReaderExecutor,
        _ cancellation: HandshakeCancellation,
        _ continuation: CheckedContinuation<Result<Connection, HeraldError>, Never>
    ) {
        executor.resources.threads.add(1, ordering: .relaxed)
        DetachedThread.start(name: "herald-reader") {
            defer { executor.resources.threads.subtract(1, ordering: .relaxed) }
            let connection: Connection
            do throws(HeraldError) {
                connection = try handshake(
                    socketPath: socketPath,
                    options: options,
                    executor: executor,
                    cancellation: cancellation
                )
            } catch {
                continuation.resume(returning: .failure(error))
                return
            }
            #if os(Linux)
            if let group = options.readerGroup {
                // A thread of the group reads it from now on; this one only connected, and ends here.
                do throws(HeraldError) {
                    try group.nextLoop().register(connection)
                } catch {
                    connection.fail(error, local: true)
                    continuation.resume(returning: .failure(error))
                    return
                }
                continuation.resume(returning: .success(connection))
                return
            }
            #endif
            // Before the caller resumes, so a task it starts at once on the executor runs on this thread.
            connection.executor.attach(ObjectIdentifier(connection))
            continuation.resume(returning: .success(connection))
            connection.runReader(maxPayload: Int(connection.welcome.maxPayload))
        }
    }

    /// Connects and completes `HELLO`/`WELCOME`, blocking the calling thread (the reader thread) for at most
    /// `requestTimeout` per read and write.
    private static func handshake(
        socketPath: String,
        options: Herald.Options,
        executor: ReaderExecutor,
        cancellation: HandshakeCancellation
    ) throws(HeraldError) -> Connection {
        let socket = try connectSocket(socketPath)
        guard cancellation.begin(socket.rawValue) else {
            throw HeraldError(.cancelled, "the task connecting to heraldd was cancelled")
        }
        let greeted = Result { () throws(HeraldError) in try greet(socket, options: options) }
        // Before the socket is closed (on failure, when it goes out of scope) or handed on: no shutdown after this.
        if cancellation.end() {
            throw HeraldError(.cancelled, "the task connecting to heraldd was cancelled during the handshake")
        }
        let welcome = try greeted.get()
        let connection = Connection(
            socket: socket,
            socketPath: socketPath,
            welcome: welcome,
            options: options,
            executor: executor
        )
        options.logger?.debug(
            "connected to \(welcome.server) (pid \(welcome.daemonPID)) on \(socketPath), "
                + "protocol \(welcome.version), maxPayload \(welcome.maxPayload)"
        )
        return connection
    }

    /// Sends `HELLO` and reads `WELCOME` on the blocking `socket`, then makes it non-blocking.
    private static func greet(
        _ socket: borrowing FileDescriptor,
        options: Herald.Options
    ) throws(HeraldError) -> Frame.Welcome {
        let seconds = options.requestTimeout.seconds
        do {
            try socket.setSendTimeout(seconds: seconds)
            try socket.setReceiveTimeout(seconds: seconds)
        } catch {
            throw HeraldError(.io, "\(error)")
        }
        let hello = Frame.hello(Frame.Hello(client: options.clientLabel)).encoded()
        let sent = hello.withUnsafeBytes { raw in Result { () throws(SystemError) in try socket.writeAll(raw) } }
        let answer: Frame
        do {
            answer = try readFrame(from: socket, timeout: options.requestTimeout)
        } catch {
            // A daemon that refuses us may have answered ERROR and closed before reading HELLO: the ERROR, if it is
            // there, says more than the failed write.
            if case .failure(let writeError) = sent {
                throw writeFailure(writeError, timeout: options.requestTimeout)
            }
            throw error
        }
        switch answer {
        case .welcome(let welcome):
            guard ProtocolVersion.supported.contains(welcome.version) else {
                throw HeraldError(.protocolError, "heraldd chose protocol version \(welcome.version), not offered")
            }
            do {
                // From here on nothing blocks: the reader thread waits in poll, and writers never wait in send.
                try socket.setNonBlocking(true)
            } catch {
                throw HeraldError(.io, "\(error)")
            }
            return welcome
        case .error(let error):
            throw daemonError(error)
        default:
            throw HeraldError(.protocolError, "heraldd answered HELLO with \(answer.type), not WELCOME")
        }
    }

    private static func connectSocket(_ path: String) throws(HeraldError) -> FileDescriptor {
        do {
            return try UnixSocket.connect(path: path)
        } catch {
            throw unavailable(path, error)
        }
    }

    /// Reads exactly one frame, so no byte meant for the reader thread is consumed here.
    private static func readFrame(from socket: borrowing FileDescriptor, timeout: Duration) throws(HeraldError) -> Frame
    {
        var bytes = try readExactly(4, from: socket, timeout: timeout)
        let length = bytes.withUnsafeBytes { Int(UInt32(littleEndian: $0.loadUnaligned(as: UInt32.self))) }
        // WELCOME and ERROR are small; the default limit is plenty and bounds what a stranger can make us buffer.
        let limit = Limits.maxFrameLength(maxPayload: Limits.defaultMaxPayload)
        guard length >= 2, length <= limit else {
            throw HeraldError(.protocolError, "heraldd answered HELLO with a frame length of \(length)")
        }
        bytes += try readExactly(length, from: socket, timeout: timeout)
        do {
            return try Frame.decode(bytes, role: .client)
        } catch {
            throw HeraldError(.protocolError, "heraldd broke the wire protocol in its answer to HELLO: \(error)")
        }
    }

    private static func readExactly(
        _ count: Int,
        from socket: borrowing FileDescriptor,
        timeout: Duration
    ) throws(HeraldError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var filled = 0
        while filled < count {
            let result = bytes.withUnsafeMutableBytes { raw in
                Result { () throws(SystemError) in
                    try socket.read(into: UnsafeMutableRawBufferPointer(rebasing: raw[filled...]))
                }
            }
            switch result {
            case .success(.processed(0)):
                throw HeraldError(.disconnected, "heraldd closed the connection during the handshake")
            case .success(.processed(let read)):
                filled += read
            case .success(.wouldBlock):
                throw HeraldError(.timedOut, "heraldd did not answer HELLO within \(timeout)")
            case .failure(let error):
                throw readFailure(error)
            }
        }
        return bytes
    }

    /// The error for a failed connect, naming the path and what to do about it.
    private static func unavailable(_ path: String, _ error: SystemError) -> HeraldError {
        switch error.errno {
        case .noEntry, .connectionRefused:
            HeraldError(
                .daemonUnavailable,
                "no heraldd is listening on \(path): \(error.errno); "
                    + "start it with 'heraldd' or 'systemctl --user start heraldd.socket'"
            )
        default:
            HeraldError(.daemonUnavailable, "cannot connect to heraldd on \(path): \(error.errno)")
        }
    }
}

extension Duration {
    /// The duration in seconds, for socket timeouts: at least a millisecond, since 0 means "forever" to the kernel.
    var seconds: Double {
        let parts = components
        return max(0.001, Double(parts.seconds) + Double(parts.attoseconds) / 1e18)
    }
}
