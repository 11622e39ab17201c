import HeraldPosix

#if os(Linux)
extension HTTPServer {
    // MARK: - Writing

    func flushPending() {
        while let id = needsFlush.popFirst() {
            if let connection = connections[id] {
                flush(connection)
            }
        }
    }

    func flush(_ connection: Connection) {
        var drained = 0
        coalesceOutput(connection)
        while let first = connection.output.first {
            let result: IOResult<Int>
            statistics.socketWrites += 1
            do {
                result = try first.bytes.withUnsafeBytes { raw in
                    try connection.socket.send(UnsafeRawBufferPointer(rebasing: raw[connection.offset...]))
                }
            } catch {
                configuration.logger.debug("connection \(connection.id): \(error)")
                closeConnection(connection, notify: true)
                return
            }
            guard case .processed(let written) = result else {
                break
            }
            connection.offset += written
            connection.queuedBytes -= written
            if connection.offset == first.bytes.count {
                drained += first.payload
                connection.output.removeFirst()
                connection.offset = 0
            }
        }
        if drained > 0, connection.phase == .streaming, let handler {
            handler.streamDrained(ConnectionID(rawValue: connection.id), bytes: drained, server: self)
        }
        if connection.output.isEmpty {
            switch connection.phase {
            case .closing where !connection.writeShut:
                // Shut the write side so the client sees the end of the answer, and keep reading until it closes
                // too: closing with unread input would make the kernel send a reset that can destroy the answer.
                try? connection.socket.shutdown(read: false, write: true)
                connection.writeShut = true
            case .reading where connection.parser.hasPartialRequest || connection.queuedBytes == 0:
                // Pipelined requests that waited for the answers to drain.
                processRequests(connection, startedNewRequest: false)
            default:
                break
            }
        }
        updateInterest(connection)
    }

    /// Joins the queued chunks that fit in 64 KiB into one buffer, so they go out in one write: a stream that was
    /// sent many lines in one turn costs one system call, not one per line. A partly written first entry is left
    /// as it is; each byte is copied at most once.
    private func coalesceOutput(_ connection: Connection) {
        let start = connection.offset == 0 ? 0 : 1
        guard connection.output.count - start > 1 else {
            return
        }
        var joined: [UInt8] = []
        var payload = 0
        var end = start
        while end < connection.output.count {
            let entry = connection.output[end]
            if end > start, joined.count + entry.bytes.count > 64 * 1024 {
                break
            }
            joined += entry.bytes
            payload += entry.payload
            end += 1
        }
        guard end - start > 1 else {
            return
        }
        connection.output.replaceSubrange(start..<end, with: [(joined, payload)])
    }

    func updateInterest(_ connection: Connection) {
        guard connections[connection.id] != nil else {
            return
        }
        do throws(SystemError) {
            try loop.setInterest(connection.wantedInterest, for: connection.socket.rawValue)
        } catch {
            configuration.logger.warning("\(error)")
            closeConnection(connection, notify: true)
        }
    }

    // MARK: - Closing

    func startClosing(_ connection: Connection) {
        connection.phase = .closing
        arm(connection, .linger, now: SystemClock.monotonicNanoseconds())
    }

    /// Forgets and closes a connection; a stream's handler hears of it when `notify` is true.
    func closeConnection(_ connection: Connection, notify: Bool) {
        guard connections.removeValue(forKey: connection.id) != nil else {
            return
        }
        needsFlush.remove(connection.id)
        let wasStreaming = connection.phase == .streaming
        if wasStreaming {
            streamCount -= 1
        }
        // Closing the descriptor (when the Connection goes away) removes it from epoll; removing it first keeps the
        // registration from outliving the number.
        loop.deregister(connection.socket.rawValue)
        configuration.logger.debug("connection \(connection.id) closed")
        // A descriptor is free again: accepting may go on.
        resumeAccepting()
        if wasStreaming, notify, let handler {
            handler.streamClosed(ConnectionID(rawValue: connection.id), server: self)
        }
    }

    /// Ends every stream with its last chunk, writes what can be written without waiting, and closes everything.
    func shutDown() {
        let streams = connections.values.filter { $0.phase == .streaming }
        for connection in streams {
            connection.queue(ChunkedEncoding.end, payload: 0)
            connection.phase = .closing
        }
        for connection in connections.values {
            flush(connection)
        }
        for connection in Array(connections.values) {
            closeConnection(connection, notify: false)
        }
    }
}
#endif
