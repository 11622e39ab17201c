import HeraldWire

/// The broker's events as its owner's event loop meets them (bytes read, output written, a turn ending), each
/// appending what the owner must do into a reused buffer of ``BrokerAction``s instead of the owner asking the broker,
/// after every frame and write, whether to go on reading, to write, to close or to watch for writability.
///
/// The broker keeps each connection's partial input (a `FrameDecoder` per connection) and what the owner was last
/// told to watch, so it can say when those change.
extension Broker {
    /// A connection was accepted from `sender`: a refused one gets ``BrokerAction/closeAfterFlush(_:)``.
    public mutating func connectionOpened(_ id: ConnectionID, sender: Sender, into actions: inout [BrokerAction]) {
        if connectionOpened(id, sender: sender) == .closeAfterFlush { actions.append(.closeAfterFlush(id)) }
    }

    /// Bytes were read from the connection: every whole frame in them is handled, where it lies, while the broker
    /// wants the connection's input; the rest waits in the connection's decoder.
    ///
    /// Handling stops early when a queue needs writing now (``BrokerAction/write(_:)``, then
    /// ``BrokerAction/readAgain(_:)``), when the connection closes, or at a protocol violation.
    ///
    /// - Parameters:
    ///   - bytes: What one read returned; only valid during the call.
    ///   - now: The daemon's clock, nanoseconds since 1970; it stamps posts.
    /// - Returns: How many frames were handled.
    @discardableResult
    public mutating func bytesRead(
        _ bytes: UnsafeRawBufferPointer,
        on id: ConnectionID,
        now: UInt64,
        into actions: inout [BrokerAction]
    ) -> Int {
        let wasAwaitingHello = isAwaitingHello(id)
        let frames: Int
        if decoders[id.rawValue].bufferedByteCount == 0 {
            frames = framesInPlace(bytes, on: id, now: now, into: &actions)
        } else {
            decoders[id.rawValue].append(bytes)
            frames = bufferedFrames(on: id, now: now, into: &actions)
        }
        inputHandled(id, wasAwaitingHello: wasAwaitingHello, into: &actions)
        framesThisTurn &+= frames
        return frames
    }

    /// Hands in the input waiting in the connection's decoder, after ``BrokerAction/readAgain(_:)``.
    ///
    /// - Returns: How many frames were handled.
    @discardableResult
    public mutating func readBuffered(on id: ConnectionID, now: UInt64, into actions: inout [BrokerAction]) -> Int {
        guard mailboxes[id.rawValue].phase != .closed else { return 0 }
        let wasAwaitingHello = isAwaitingHello(id)
        let frames = bufferedFrames(on: id, now: now, into: &actions)
        inputHandled(id, wasAwaitingHello: wasAwaitingHello, into: &actions)
        framesThisTurn &+= frames
        return frames
    }

    /// The owner wrote what the connection's socket took of its output (``didWrite(_:to:)`` for each write): output
    /// left while the socket has room is written at once (``BrokerAction/write(_:)``), a closing connection with
    /// nothing left closes (``BrokerAction/close(_:)``), input that waited for the queue to drain is handled now, and
    /// the owner is told what to watch.
    ///
    /// - Parameter socketFull: Whether the last write found the socket full (it would block, or took less than it
    ///   was offered). When it took everything, what is left (one write offers a bounded number of bytes and
    ///   ranges) needs no wait for writability.
    public mutating func writesDone(
        on id: ConnectionID,
        socketFull: Bool,
        now: UInt64,
        into actions: inout [BrokerAction]
    ) {
        guard mailboxes[id.rawValue].phase != .closed else { return }
        if !socketFull && hasOutput(id) {
            actions.append(.write(id))
            return
        }
        if !hasOutput(id) && isClosing(id) {
            actions.append(.close(id))
            return
        }
        if !mailboxes[id.rawValue].watchesReading && wantsInput(id) && decoders[id.rawValue].bufferedByteCount > 0 {
            // Reading was paused with frames still buffered: they go before new input.
            readBuffered(on: id, now: now, into: &actions)
        } else {
            announceWatch(id, into: &actions)
        }
    }

    /// The owner read a round of ready connections and may write now or read another round first: under load (at
    /// least ``framesForAnotherRound`` frames this turn) with output waiting for more than one connection, a
    /// ``BrokerAction/readAnotherRound`` says reading on first gives each connection more frames per send.
    ///
    /// The owner bounds the rounds, and reads another only when input is ready: a post that arrives alone (the
    /// latency case) is written at once, and one subscriber's batch (already one send per turn) costs no extra
    /// wait.
    public mutating func readRoundEnded(into actions: inout [BrokerAction]) {
        if framesThisTurn >= Self.framesForAnotherRound && dirty.count > 1 { actions.append(.readAnotherRound) }
    }

    /// The owner is about to write: every connection with new output since the last turn gets a
    /// ``BrokerAction/write(_:)``, each once.
    ///
    /// Each once really is once: an id that had output, closed and reopened within the turn has two entries in
    /// `dirty`, and only the first is handed out (an owner that writes several connections in one batch would
    /// otherwise send the same bytes twice).
    public mutating func turnEnding(into actions: inout [BrokerAction]) {
        framesThisTurn = 0
        for id in dirty where mailboxes[id.rawValue].phase != .closed && mailboxes[id.rawValue].isDirty {
            mailboxes[id.rawValue].isDirty = false
            actions.append(.write(id))
        }
        dirty.removeAll(keepingCapacity: true)
    }

    /// The owner wrote the turn's output: frames not written leave the arena (``endTurn()``), output over
    /// `maxQueuedBytes` is shed, and a change of the earliest will's deadline is a ``BrokerAction/wakeAt(_:)``.
    public mutating func turnEnded(into actions: inout [BrokerAction]) {
        endTurn()
        if isOverGlobalBound { shedOutput(into: &actions) }
        if !pendingWills.isEmpty, let due = nextWillDeadline, due != announcedWillDeadline {
            announcedWillDeadline = due
            actions.append(.wakeAt(due))
        } else if pendingWills.isEmpty {
            announcedWillDeadline = nil
        }
    }

    // MARK: Internals

    /// Handles the whole frames of `bytes` where they lie; only what is left is copied into the decoder. Copying
    /// every read first was ~100 instructions a post (callgrind, named).
    private mutating func framesInPlace(
        _ bytes: UnsafeRawBufferPointer,
        on id: ConnectionID,
        now: UInt64,
        into actions: inout [BrokerAction]
    ) -> Int {
        let scanner = decoders[id.rawValue].scanner
        let maxPayload = configuration.bounds.maxPayload
        var offset = 0
        var frames = 0
        var more = true
        while more && wantsInput(id) {
            let rest = UnsafeRawBufferPointer(rebasing: bytes[offset...])
            let action: Action
            var size = 0
            do {
                guard let whole = try scanner.frameSize(atStartOf: rest), whole <= rest.count else { break }
                size = whole
                // The frame's bytes outlive this call, so a POST's view comes back as a value: no closure round
                // trip from HeraldWire into the broker.
                let next = try FrameDecoder.frame(
                    UnsafeRawBufferPointer(rebasing: rest[..<size]),
                    role: .daemon,
                    maxPayload: maxPayload,
                    version: mailboxes[id.rawValue].version
                )
                action = received(next, from: id, now: now)
            } catch {
                // A refusal in version 2 answers its frame, and the next frame is read.
                guard size > 0, let refused = refusedInput(error, on: id) else {
                    inputBroke(id, error, into: &actions)
                    // Nothing after a violation is read.
                    return frames
                }
                action = refused
            }
            offset += size
            frames += 1
            more = frameHandled(id, action, into: &actions)
        }
        if offset < bytes.count && mailboxes[id.rawValue].phase != .closed {
            decoders[id.rawValue].append(UnsafeRawBufferPointer(rebasing: bytes[offset...]))
            if !more && wantsInput(id) { actions.append(.readAgain(id)) }
        }
        return frames
    }

    /// Handles the frames buffered in the connection's decoder while the broker wants them.
    private mutating func bufferedFrames(on id: ConnectionID, now: UInt64, into actions: inout [BrokerAction]) -> Int {
        // Taken out while frames are handled, which change the broker too (an empty decoder allocates nothing).
        var decoder = FrameDecoder(role: .daemon)
        swap(&decoder, &decoders[id.rawValue])
        defer { swap(&decoder, &decoders[id.rawValue]) }
        var frames = 0
        while wantsInput(id) {
            // HELLO may have chosen the version while the decoder was out.
            decoder.version = mailboxes[id.rawValue].version
            do {
                guard let action = try receiveNext(from: &decoder, on: id, now: now) else { break }
                frames += 1
                guard frameHandled(id, action, into: &actions) else {
                    if decoder.bufferedByteCount > 0 && wantsInput(id) { actions.append(.readAgain(id)) }
                    break
                }
            } catch {
                // A refusal in version 2 answers its frame, which the decoder has consumed; the next is read.
                guard let refused = refusedInput(error, on: id) else {
                    inputBroke(id, error, into: &actions)
                    break
                }
                frames += 1
                guard frameHandled(id, refused, into: &actions) else { break }
            }
        }
        return frames
    }

    /// What follows one of the connection's frames.
    ///
    /// - Returns: Whether to go on with its input now: not once it is closing, nor while a queue needs writing.
    // Always inlined: called once per frame, a call of its own cost ~33 instructions a post (callgrind, fan-out 1).
    @inline(__always)
    private mutating func frameHandled(_ id: ConnectionID, _ action: Action, into actions: inout [BrokerAction]) -> Bool
    {
        if !subscribedPatterns.isEmpty {
            for pattern in subscribedPatterns { actions.append(.subscribed(pattern)) }
            subscribedPatterns.removeAll(keepingCapacity: true)
        }
        if !pluginRequests.isEmpty {
            for request in pluginRequests { actions.append(.pluginRequest(request)) }
            pluginRequests.removeAll(keepingCapacity: true)
            // Its answer goes before whatever the connection sent next.
            return false
        }
        if action == .closeAfterFlush {
            actions.append(.closeAfterFlush(id))
            return false
        }
        if isOverGlobalBound { shedOutput(into: &actions) }
        guard urgent.isEmpty else {
            for urgentID in urgent where mailboxes[urgentID.rawValue].phase != .closed {
                actions.append(.write(urgentID))
            }
            urgent.removeAll(keepingCapacity: true)
            return false
        }
        return true
    }

    private mutating func inputBroke(_ id: ConnectionID, _ error: WireError, into actions: inout [BrokerAction]) {
        actions.append(.protocolViolation(id, error))
        _ = inputFailed(error, on: id)
        actions.append(.closeAfterFlush(id))
    }

    private mutating func inputHandled(_ id: ConnectionID, wasAwaitingHello: Bool, into actions: inout [BrokerAction]) {
        let phase = mailboxes[id.rawValue].phase
        guard phase != .closed else { return }
        if wasAwaitingHello && phase != .awaitingHello { actions.append(.handshakeEnded(id)) }
        announceWatch(id, into: &actions)
    }

    /// Tells the owner what to watch the connection for, when that changed.
    private mutating func announceWatch(_ id: ConnectionID, into actions: inout [BrokerAction]) {
        let reading = wantsInput(id)
        let writing = hasOutput(id)
        guard reading != mailboxes[id.rawValue].watchesReading || writing != mailboxes[id.rawValue].watchesWriting
        else { return }
        mailboxes[id.rawValue].watchesReading = reading
        mailboxes[id.rawValue].watchesWriting = writing
        actions.append(.watch(id, reading: reading, writing: writing))
    }

    private mutating func shedOutput(into actions: inout [BrokerAction]) {
        var disconnected: [ConnectionID] = []
        let dropped = relieveGlobalBound(disconnecting: &disconnected)
        for id in disconnected { actions.append(.closeAfterFlush(id)) }
        actions.append(.shedOutput(dropped: dropped, disconnected: disconnected.count))
    }
}

extension Broker {
    /// The owner began closing the connection after a ``BrokerAction/closeAfterFlush(_:)``: it is told to stop
    /// reading it and to watch it for room while output is queued.
    public mutating func closingBegan(on id: ConnectionID, into actions: inout [BrokerAction]) {
        guard mailboxes[id.rawValue].phase != .closed else { return }
        let writing = hasOutput(id)
        guard mailboxes[id.rawValue].watchesReading || writing != mailboxes[id.rawValue].watchesWriting else { return }
        mailboxes[id.rawValue].watchesReading = false
        mailboxes[id.rawValue].watchesWriting = writing
        actions.append(.watch(id, reading: false, writing: writing))
    }
}
