import HeraldPosix

#if os(Linux)
extension HTTPServer {
    // MARK: - Deadlines

    /// Gives `connection` the deadline of `timer` from `now` and queues it there; the entry it had in another queue
    /// goes stale.
    func arm(_ connection: Connection, _ timer: Connection.Timer, now: UInt64) {
        let duration =
            switch timer {
            case .request: configuration.requestTimeout
            case .idle: configuration.idleTimeout
            case .linger: configuration.lingerTimeout
            }
        let deadline = now + Self.nanoseconds(duration)
        if connection.timer == timer, connection.deadline == deadline {
            return
        }
        connection.timer = timer
        connection.deadline = deadline
        let live = connections.count
        switch timer {
        case .request:
            requestDeadlines.push(id: connection.id, deadline: deadline)
            requestDeadlines.compactIfSparse(live: live, isCurrent: isCurrent(.request))
        case .idle:
            idleDeadlines.push(id: connection.id, deadline: deadline)
            idleDeadlines.compactIfSparse(live: live, isCurrent: isCurrent(.idle))
        case .linger:
            lingerDeadlines.push(id: connection.id, deadline: deadline)
            lingerDeadlines.compactIfSparse(live: live, isCurrent: isCurrent(.linger))
        }
    }

    /// Whether a queue entry still describes its connection: open, on that timer, with that deadline.
    private func isCurrent(_ timer: Connection.Timer) -> (DeadlineQueue.Entry) -> Bool {
        { entry in
            guard let connection = self.connections[entry.id] else {
                return false
            }
            return connection.timer == timer && connection.deadline == entry.deadline
        }
    }

    /// The connection at the front of `timer`'s queue, the one that has waited longest there; nil if none.
    private func front(_ timer: Connection.Timer) -> Connection? {
        let entry =
            switch timer {
            case .request: requestDeadlines.front(isCurrent: isCurrent(.request))
            case .idle: idleDeadlines.front(isCurrent: isCurrent(.idle))
            case .linger: lingerDeadlines.front(isCurrent: isCurrent(.linger))
            }
        return entry.flatMap { connections[$0.id] }
    }

    /// Keeps the loop's one timer for the server at the earliest deadline: a connection's, the handler's, or the end
    /// of an accept pause. The queues keep the connections in deadline order (for eviction as much as for timing), so
    /// the loop needs only their earliest.
    func scheduleDeadlineTimer() {
        var earliest: UInt64?
        for timer in [Connection.Timer.request, .idle, .linger] {
            if let deadline = front(timer)?.deadline {
                earliest = min(earliest ?? deadline, deadline)
            }
        }
        for deadline in [handler?.nextDeadline, acceptPausedUntil].compactMap(\.self) {
            earliest = min(earliest ?? deadline, deadline)
        }
        guard earliest != deadlineTimer?.deadline else {
            return
        }
        if let timer = deadlineTimer.take() {
            loop.cancel(timer.id)
        }
        if let earliest {
            deadlineTimer = (loop.schedule(.deadlines, at: earliest), earliest)
        }
    }

    /// Acts on every deadline that has passed: O(1) per expired connection, none for the others.
    func checkDeadlines() {
        let now = SystemClock.monotonicNanoseconds()
        for timer in [Connection.Timer.request, .idle, .linger] {
            while let connection = front(timer), connection.deadline <= now {
                if timer == .request, connection.phase == .reading, connection.parser.hasPartialRequest {
                    configuration.logger.info("connection \(connection.id): the request took too long to arrive")
                    connection.queue(
                        HTTPResponse.error(.requestTimeout, reason: "the request took too long to arrive")
                            .encoded(keepAlive: false),
                        payload: 0
                    )
                    startClosing(connection)
                    needsFlush.insert(connection.id)
                } else {
                    closeConnection(connection, notify: true)
                }
            }
        }
        if let resumeAt = acceptPausedUntil, resumeAt <= now {
            resumeAccepting()
        }
        if let handler, let deadline = handler.nextDeadline, deadline <= now {
            handler.deadlineReached(server: self)
        }
    }

    // MARK: - Pressure

    /// Closes the request connection that has waited longest, to make room for a new one: a closing connection
    /// first (its answer is written or its client is not reading it), then one idle between requests, then the
    /// oldest unfinished request, which for a slowloris is the slowest. A request younger than
    /// ``Configuration/evictionGrace`` is kept: it may not have been read yet. Streams are never closed for this.
    ///
    /// Before a connection is closed, what it has already sent is taken in, once, through the same bounded read as a
    /// readable event: a request that sat complete but unread in its socket (the loop had not got to it yet, on a
    /// loaded machine) is answered instead, and the search goes on to the next candidate. Only a connection that,
    /// with its input read, still has no complete request is closed, after its queued answer is written, so that a
    /// request answered earlier in this turn is not lost with it.
    ///
    /// - Returns: false when there is no request connection to close.
    func evictLongestWaiting(because reason: String) -> Bool {
        let now = SystemClock.monotonicNanoseconds()
        // Each connection gets one look at its input per call: after it, the candidate is closed if it still is one.
        // That bounds the call to two turns per connection, and a slowloris to one bounded read.
        var inspected: Set<UInt64> = []
        while let connection = evictionCandidate(now: now) {
            let id = connection.id
            if inspected.insert(id).inserted {
                takeInPendingInput(connection)
                if connections[id] == nil {
                    // It had hung up or failed: that made the room.
                    return true
                }
                continue
            }
            statistics.evictedConnections += 1
            warnOfPressure(.eviction, "closing the longest-waiting request connections: \(reason)")
            configuration.logger.debug("connection \(id) closed to make room: \(reason)")
            if !connection.output.isEmpty {
                flush(connection)
            }
            closeConnection(connection, notify: false)
            return true
        }
        return false
    }

    /// The connection ``evictLongestWaiting(because:)`` would close now: the front of the linger queue, else of the
    /// idle queue, else of the request queue once past the grace; nil when none may be closed.
    private func evictionCandidate(now: UInt64) -> Connection? {
        let requestTimeout = Self.nanoseconds(configuration.requestTimeout)
        let grace = Self.nanoseconds(configuration.evictionGrace)
        for timer in [Connection.Timer.linger, .idle, .request] {
            if let connection = front(timer) {
                // A request's deadline is its start plus the request timeout.
                if timer == .request, connection.deadline - requestTimeout + grace > now {
                    return nil
                }
                return connection
            }
        }
        return nil
    }

    /// Writes what is queued for `connection` and reads what it has sent, as one turn of the loop would, so that an
    /// eviction judges it on everything it sent: complete requests are answered (and re-arm its deadline), a closing
    /// connection's input is drained. Reads only what the loop would read now (not the input of a client that has
    /// stopped reading its answers), at most the loop's bounded read, so the parser's limits hold as they do for
    /// any readable event. It may close the connection (end of file, an error).
    private func takeInPendingInput(_ connection: Connection) {
        if !connection.output.isEmpty {
            flush(connection)
        }
        guard connections[connection.id] != nil, connection.wantedInterest.contains(.readable) else {
            return
        }
        read(connection, keepingRequestStart: true)
    }

    /// Stops watching the listener until ``Configuration/acceptPause`` has passed or a connection closes.
    func pauseAccepting(because reason: String) {
        guard acceptPausedUntil == nil else {
            return
        }
        statistics.acceptPauses += 1
        warnOfPressure(.acceptPause, "\(reason); pausing accepts until a connection closes")
        loop.deregister(listener.rawValue)
        acceptPausedUntil = SystemClock.monotonicNanoseconds() + Self.nanoseconds(configuration.acceptPause)
    }

    /// Watches the listener again after ``pauseAccepting(_:)``; nothing when accepting is not paused.
    func resumeAccepting() {
        guard acceptPausedUntil != nil, !stopping else {
            return
        }
        do throws(SystemError) {
            try loop.register(listener.rawValue, interest: .readable, handler: .listener)
            acceptPausedUntil = nil
        } catch {
            // Try again at the next deadline check.
            configuration.logger.warning("\(error)")
            acceptPausedUntil = SystemClock.monotonicNanoseconds() + Self.nanoseconds(configuration.acceptPause)
        }
    }

    /// The kinds of pressure, each warned of at most once every 10 s.
    enum Pressure: Hashable {
        case eviction
        case acceptPause
        case streamLimit
    }

    /// Logs `message` as a warning at most once every 10 s for each kind, and at debug level otherwise: under
    /// attack the same event happens thousands of times a second.
    func warnOfPressure(_ kind: Pressure, _ message: String) {
        let now = SystemClock.monotonicNanoseconds()
        if let last = lastPressureWarnings[kind], now - last < 10_000_000_000 {
            configuration.logger.debug(message)
            return
        }
        lastPressureWarnings[kind] = now
        configuration.logger.warning(message)
    }
}
#endif
