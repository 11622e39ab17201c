import HeraldPosix

#if os(Linux)
extension HTTPServer {
    /// One client connection: its socket, parser, output queue and deadline.
    final class Connection {
        /// Which timeout the connection's deadline is.
        enum Timer: Equatable {
            /// A request has to arrive (answered 408 if it started, closed if it did not).
            case request
            /// Kept alive between requests.
            case idle
            /// Closing: the answer has to be flushed and the input drained.
            case linger
        }

        enum Phase: Equatable {
            /// Reading requests and answering them.
            case reading
            /// Sending a chunked stream; input is read only to notice the client leaving.
            case streaming
            /// Writing the last answer; then the write side is shut and input drained until end of file.
            case closing
        }

        let id: UInt64
        let socket: FileDescriptor
        /// The client's numeric address; empty when it could not be read.
        let peer: String
        var parser: HTTPRequestParser
        var phase = Phase.reading
        /// What still has to be written: wire bytes, and how many of them are handler payload (for draining).
        var output: [(bytes: [UInt8], payload: Int)] = []
        /// How much of `output[0]` is written.
        var offset = 0
        var queuedBytes = 0
        /// When this connection times out, in monotonic nanoseconds; meaningless while `timer` is nil.
        var deadline: UInt64 = 0
        /// Which timeout `deadline` is; nil for a stream, which has none.
        var timer: Timer?
        /// Whether the write side has been shut down (closing, output all written).
        var writeShut = false
        /// The request whose stream this connection carries.
        var streamRequest: HTTPRequest?

        init(id: UInt64, socket: consuming FileDescriptor, peer: String, limits: HTTPRequestParser.Limits) {
            self.id = id
            self.socket = socket
            self.peer = peer
            self.parser = HTTPRequestParser(limits: limits)
        }

        func queue(_ bytes: [UInt8], payload: Int) {
            guard !bytes.isEmpty else {
                return
            }
            output.append((bytes, payload))
            queuedBytes += bytes.count
        }

        var wantedInterest: Epoll.Events {
            var events: Epoll.Events = []
            switch phase {
            // Backpressure: a client that pipelines requests without reading the answers is not read further.
            case .reading: if queuedBytes < 64 * 1024 { events.formUnion([.readable, .readHangup]) }
            case .streaming: events.formUnion([.readable, .readHangup])
            case .closing: if writeShut { events.formUnion([.readable, .readHangup]) }
            }
            if !output.isEmpty {
                events.insert(.writable)
            }
            return events
        }
    }

    static func nanoseconds(_ duration: Duration) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        return UInt64(max(seconds, 0)) * 1_000_000_000 + UInt64(max(attoseconds, 0) / 1_000_000_000)
    }

    // MARK: - Accepting

    /// Accepts up to 64 waiting connections; the rest wait for the next turn, so a flood of connections cannot keep
    /// the loop from the others.
    func acceptConnections() {
        for _ in 0..<64 {
            let atLimit = connections.count - streamCount >= configuration.maximumRequestConnections
            // Room is made only for a newcomer that is there: the loop comes round once more after taking the last
            // one waiting, and closing a connection then would be for nobody.
            if atLimit, !newcomerIsWaiting() {
                return
            }
            if atLimit,
                !evictLongestWaiting(
                    because: "\(configuration.maximumRequestConnections) request connections are open (the limit)"
                )
            {
                // Every request connection is new: the newcomers wait in the listen backlog, in order, until one
                // closes or becomes old enough to close.
                pauseAccepting(
                    because: "\(configuration.maximumRequestConnections) request connections are open, all of them new"
                )
                return
            }
            let accepted: FileDescriptor?
            do throws(SystemError) {
                accepted = try TCPSocket.accept(listener)
            } catch {
                if error.errno == .connectionAborted {
                    continue
                }
                // Out of descriptors: make one by closing the longest-waiting request connection. When there is none
                // (streams hold them all) or memory is short, stop watching the listener for a moment: it stays
                // readable, and retrying at once would spin.
                if error.errno == .tooManyOpenFiles || error.errno == .outOfFileTable,
                    evictLongestWaiting(because: "out of descriptors (\(error))")
                {
                    continue
                }
                pauseAccepting(because: "cannot accept: \(error)")
                return
            }
            guard let socket = accepted else {
                return
            }
            statistics.acceptedConnections += 1
            let id = nextID
            nextID += 1
            let peer = (try? TCPSocket.peerAddress(of: socket)) ?? ""
            let connection = Connection(id: id, socket: socket, peer: peer, limits: configuration.limits)
            do throws(SystemError) {
                try loop.register(
                    connection.socket.rawValue,
                    interest: [.readable, .readHangup],
                    handler: .connection(id)
                )
            } catch {
                configuration.logger.warning("\(error)")
                continue
            }
            connections[id] = connection
            arm(connection, .request, now: SystemClock.monotonicNanoseconds())
            configuration.logger.debug("connection \(id) from \(peer) accepted")
        }
    }

    /// Whether a connection waits in the listen backlog: a poll that does not wait. When the poll itself fails,
    /// assume one does, as before this check.
    private func newcomerIsWaiting() -> Bool {
        (try? listener.waitForInput(orFrom: -1, timeoutMilliseconds: 0).this) ?? true
    }

    // MARK: - Reading

    func connectionReady(_ id: UInt64, events: Epoll.Events) {
        guard let connection = connections[id] else {
            return
        }
        if events.contains(.writable) || events.contains(.error) {
            flush(connection)
        }
        guard connections[id] != nil else {
            return
        }
        if !events.isDisjoint(with: [.readable, .readHangup, .hangup, .error]) {
            read(connection)
        }
    }

    /// Reads what `connection` has sent, a bounded amount, and acts on it.
    ///
    /// - Parameter keepingRequestStart: for bytes read late (an eviction taking in what a connection sent), a request
    ///   they start keeps the start its timer already has instead of starting now, so that reading a slow head late
    ///   cannot make it look new.
    func read(_ connection: Connection, keepingRequestStart: Bool = false) {
        // A bounded number of reads per wakeup, so one fast client cannot starve the others.
        for _ in 0..<4 {
            let result: IOResult<Int>
            do {
                result = try readBuffer.withUnsafeMutableBytes { raw in try connection.socket.read(into: raw) }
            } catch {
                configuration.logger.debug("connection \(connection.id): \(error)")
                closeConnection(connection, notify: true)
                return
            }
            guard case .processed(let count) = result else {
                return
            }
            if count == 0 {
                if connection.phase == .reading, connection.parser.hasPartialRequest {
                    configuration.logger.debug("connection \(connection.id) ended in the middle of a request")
                }
                closeConnection(connection, notify: true)
                return
            }
            switch connection.phase {
            case .reading:
                let hadPartial = connection.parser.hasPartialRequest
                connection.parser.append(readBuffer[..<count])
                processRequests(connection, startedNewRequest: !hadPartial && !keepingRequestStart)
                if connection.phase != .reading || connection.queuedBytes >= 64 * 1024 {
                    return
                }
            case .streaming, .closing:
                // Nothing more is expected from a stream's client, and a closing connection's input is discarded.
                continue
            }
        }
    }

    /// Takes complete requests out of the parser and answers them, in order, until it needs more bytes, the
    /// connection changes phase, or answers pile up unread.
    func processRequests(_ connection: Connection, startedNewRequest: Bool) {
        let now = SystemClock.monotonicNanoseconds()
        if startedNewRequest {
            arm(connection, .request, now: now)
        }
        while connection.phase == .reading, connection.queuedBytes < 64 * 1024 {
            switch connection.parser.next() {
            case .needMoreData:
                if !connection.parser.hasPartialRequest, connection.timer == .request {
                    arm(connection, .idle, now: now)
                } else if connection.parser.hasPartialRequest, connection.timer != .request {
                    arm(connection, .request, now: now)
                }
                updateInterest(connection)
                return
            case .continueExpected:
                connection.queue(HTTPResponseHead(status: .continue).encoded(), payload: 0)
            case .error(let error):
                configuration.logger.info("connection \(connection.id): \(error)")
                connection.queue(
                    HTTPResponse.error(error.status, reason: error.reason).encoded(keepAlive: false),
                    payload: 0
                )
                startClosing(connection)
            case .request(let request):
                answer(request, on: connection)
                // The next request, if any bytes of it are here, gets a full timeout of its own.
                if connection.phase == .reading {
                    arm(connection, .request, now: now)
                }
            }
        }
        needsFlush.insert(connection.id)
    }

    private func answer(_ request: HTTPRequest, on connection: Connection) {
        guard let handler else {
            return
        }
        let id = ConnectionID(rawValue: connection.id)
        switch handler.handle(request, on: id, server: self) {
        case .response(let response):
            let keepAlive = request.keepAlive && !stopping
            configuration.logger.debug(
                "connection \(connection.id): \(request.method) \(request.target) \(response.status.code)"
            )
            connection.queue(response.encoded(keepAlive: keepAlive), payload: 0)
            if !keepAlive {
                startClosing(connection)
            }
        case .stream where streamCount >= configuration.maximumStreams:
            statistics.refusedStreams += 1
            warnOfPressure(
                .streamLimit,
                "refused a stream: \(configuration.maximumStreams) streams are open (the limit)"
            )
            let response = HTTPResponse.error(
                .serviceUnavailable,
                reason: "the server is at its limit of \(configuration.maximumStreams) streams; try again later",
                headers: ["Retry-After": "10"]
            )
            connection.queue(response.encoded(keepAlive: false), payload: 0)
            startClosing(connection)
        case .stream(let head):
            configuration.logger.debug("connection \(connection.id): \(request.method) \(request.target) stream")
            if let bytes = configuration.streamSendBuffer {
                do throws(SystemError) {
                    try TCPSocket.setSendBuffer(connection.socket, bytes: bytes)
                } catch {
                    configuration.logger.warning("connection \(connection.id): \(error); its stream keeps the default")
                }
            }
            connection.queue(head.encoded(), payload: 0)
            connection.phase = .streaming
            connection.timer = nil
            streamCount += 1
            connection.streamRequest = request
            handler.streamStarted(id, request: request, server: self)
        }
        needsFlush.insert(connection.id)
    }
}
#endif
