// A libFuzzer target for heraldd's input handling: FrameDecoder(role: .daemon) and the Broker behind it.
//
// Built by Tests/Fuzz/run.sh together with the sources of HeraldWire and HeraldBroker as one module
// (so there is no `import` here). The input is a script that drives up to four connections of ONE
// broker the way heraldd's event loop does (Sources/HeraldDaemon/Daemon+Connections.swift): bytes read
// go to `bytesRead`, and every `BrokerAction` the broker appends is carried out as heraldd carries it
// out (write, watch, read again, close after flush, close, answer a PLUGIN request); output is written
// with `pendingOutput`/`didWrite` (sometimes partially) and reported with `writesDone`; a turn ends with
// `turnEnding`/`turnEnded`; connections close, the clock moves and wills fall due. Tests/Fuzz/README.md
// documents the format.
//
// Every crash is a bug in Herald: the daemon must never trap on client input. Beyond the traps the
// code under test already has (preconditions, overflow checks, AddressSanitizer), this checks that
// the daemon's own output decodes as a client would decode it (FrameDecoder(role: .client) sized by
// the WELCOME's maxPayload, as the Herald library does) and keeps wire.md's promises, and that the
// broker's bookkeeping holds (queue bounds, counters, no encoded frame alive once all are closed).

/// `precondition`, but its message survives -O (the build's optimization strips precondition messages),
/// so a crash report says which promise broke.
private func require(_ condition: Bool, _ message: @autoclosure () -> String, line: UInt = #line) {
    if !condition { fatalError("fuzz check failed: \(message())", line: line) }
}

private func requireFailure(_ message: String, line: UInt = #line) -> Never {
    fatalError("fuzz check failed: \(message)", line: line)
}

/// The limits the broker runs with: small, so limits and overflow paths are reached by short inputs.
private enum FuzzLimits {
    static let ownerUID: UInt32 = 1000
    static let maxPayload = 1024
    /// Below the protocol's 255, so `--max-name-bytes` refusals are reached too.
    static let maxNameBytes = 200
    static let queueBytes = 4096
    static let maxSubscriptions = 8
    /// Small, so `PATTERN_TOO_COMPLEX` is reached by two or three wildcard patterns.
    static let maxPatternCost = 12
    /// Small, so `TOO_MANY_NAMES` is reached by a few retained names and exact subscriptions.
    static let maxNames = 6
    static let maxRetained = 8
    /// Under 8 full payloads, so the byte bound is reached before the count.
    static let maxRetainedBytes = 3000
    static let maxWills = 2
    static let maxWillBytes = 1500
    static let maxConnections = 3
    /// Under what four queues can hold (each up to about three times `queueBytes`), so the global bound is reached.
    static let maxQueuedBytes = 12_000
    static let connections = 4
    /// Bounds the work of one input (a `repeat` can multiply it), so no input runs into -timeout.
    static let maxFramesPerInput = 20_000
}

/// Reads the script.
private struct Script {
    let bytes: UnsafeBufferPointer<UInt8>
    var offset = 0

    var isAtEnd: Bool { offset >= bytes.count }

    /// The next byte, or 0 past the end.
    mutating func u8() -> UInt8 {
        guard offset < bytes.count else { return 0 }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func u16() -> Int {
        Int(u8()) | Int(u8()) << 8
    }

    /// Up to `count` bytes, fewer at the end.
    mutating func take(_ count: Int) -> UnsafeBufferPointer<UInt8> {
        let end = min(bytes.count, offset + count)
        defer { offset = end }
        return UnsafeBufferPointer(rebasing: bytes[offset..<end])
    }
}

/// The fuzzer's view of one connection: the daemon's decoder for it, and a client decoder that reads
/// what the daemon wrote to it.
private struct Peer {
    var isOpen = false
    /// Whether the broker ever heard of this id: its queries are only for ids it was given.
    var wasOpened = false
    /// What the client sent that the daemon has not read yet: it waits in the socket while reading is paused.
    var unread: [UInt8] = []
    /// Whether the broker last asked for the connection to be watched for reading (a new one is).
    var watchesReading = true
    /// Whether the broker asked for it to be closed after its output (``BrokerAction/closeAfterFlush(_:)``).
    var isClosing = false
    /// The client's decoder, sized by WELCOME's maxPayload once the first frame is read.
    var output = FrameDecoder(role: .client)
    /// The first frame's bytes while they arrive.
    var handshake: [UInt8] = []
    /// A stalled client reads nothing, so urgent and dirty flushes write nothing to it.
    var isStalled = false
    /// Whether WELCOME (or a final ERROR) was read: until then frames are read as the handshake does.
    var isGreeted = false
    var sawWelcome = false
    var sawError = false
    /// The version WELCOME chose: in version 2 a refusal is not final.
    var version: UInt16 = 1
    var lastLiveSequence: UInt64 = 0
}

private struct Harness {
    var broker: Broker
    var peers = [Peer](repeating: Peer(), count: FuzzLimits.connections)
    var monotonic: UInt64 = 1_000_000_000
    let realtimeBase: UInt64 = 1_795_000_000_000_000_000
    var isShutDown = false
    var frames = 0
    var chunk: [UInt8] = []
    /// The broker's actions, reused as heraldd reuses its buffer.
    var actions: [BrokerAction] = []
    var carryingOut = false
    /// The last bytes fed, for `repeat`.
    var lastFeed: [UInt8] = []
    /// Live NOTIFY frames the clients read whole, over all connections so far.
    var liveRead: UInt64 = 0
    /// The sum of the counts of every DROPPED notice the clients read.
    var droppedNoticed: UInt64 = 0

    init() {
        var configuration = Broker.Configuration(
            ownerUID: FuzzLimits.ownerUID,
            daemonPID: 4242,
            server: "heraldd fuzz",
            startTime: 1_795_000_000_000_000_000
        )
        configuration.bounds.maxPayload = FuzzLimits.maxPayload
        configuration.bounds.maxNameBytes = FuzzLimits.maxNameBytes
        configuration.bounds.queueBytes = FuzzLimits.queueBytes
        configuration.bounds.maxSubscriptions = FuzzLimits.maxSubscriptions
        configuration.bounds.maxPatternCost = FuzzLimits.maxPatternCost
        configuration.bounds.maxNames = FuzzLimits.maxNames
        configuration.bounds.maxRetained = FuzzLimits.maxRetained
        configuration.bounds.maxRetainedBytes = FuzzLimits.maxRetainedBytes
        configuration.bounds.maxWills = FuzzLimits.maxWills
        configuration.bounds.maxWillBytes = FuzzLimits.maxWillBytes
        configuration.bounds.maxConnections = FuzzLimits.maxConnections
        configuration.bounds.maxQueuedBytes = FuzzLimits.maxQueuedBytes
        broker = Broker(configuration: configuration)
        broker.reportsSubscriptions = true
    }

    var realtimeNow: UInt64 { realtimeBase + monotonic }

    // MARK: Events, as heraldd's loop produces them

    mutating func open(_ slot: Int, uidChoice: UInt8) {
        guard !peers[slot].isOpen, !isShutDown else { return }  // heraldd stops accepting when shutting down
        let uid: UInt32 =
            switch uidChoice & 3 {
            case 1: 0
            case 2: FuzzLimits.ownerUID + 1
            default: FuzzLimits.ownerUID
            }
        peers[slot] = Peer()
        peers[slot].isOpen = true
        peers[slot].wasOpened = true
        broker.connectionOpened(
            ConnectionID(slot),
            sender: Sender(pid: Int32(100 + slot), uid: uid, gid: 100),
            into: &actions
        )
        carryOutActions()
        checkInvariants()
    }

    mutating func feed(_ slot: Int, _ bytes: UnsafeRawBufferPointer) {
        guard peers[slot].isOpen else { return }
        lastFeed = Array(bytes)
        // heraldd reads only while the broker has it watch the connection for reading; until then the bytes wait
        // in the socket.
        peers[slot].unread.append(contentsOf: bytes)
        readSocket(slot)
    }

    /// Sources/HeraldDaemon/Daemon+Connections.swift, readChannel: one read of everything the socket holds.
    mutating func readSocket(_ slot: Int) {
        let id = ConnectionID(slot)
        guard peers[slot].isOpen, peers[slot].watchesReading, broker.wantsInput(id), !peers[slot].unread.isEmpty,
            frames < FuzzLimits.maxFramesPerInput
        else { return }
        require(!peers[slot].isClosing, "\(id) is watched for reading while closing")
        let bytes = peers[slot].unread
        peers[slot].unread.removeAll(keepingCapacity: true)
        let now = realtimeNow
        frames += bytes.withUnsafeBytes { broker.bytesRead($0, on: id, now: now, into: &actions) }
        carryOutActions()
        checkInvariants()
    }

    /// Sources/HeraldDaemon/Daemon+Connections.swift, carryOutActions: in order, including what carrying them out
    /// appends.
    mutating func carryOutActions() {
        guard !carryingOut, !actions.isEmpty else { return }
        carryingOut = true
        var index = 0
        while index < actions.count {
            let action = actions[index]
            index += 1
            carryOut(action)
        }
        actions.removeAll(keepingCapacity: true)
        carryingOut = false
    }

    mutating func carryOut(_ action: BrokerAction) {
        switch action {
        case .write(let id):
            // An earlier action of the same buffer may have closed it: heraldd skips those.
            guard peers[id.rawValue].isOpen else { return }
            if peers[id.rawValue].isStalled {
                // The socket is full: heraldd's write would block.
                broker.writesDone(on: id, socketFull: true, now: realtimeNow, into: &actions)
            } else {
                write(id.rawValue, budget: Int.max, maxChunks: 64)
            }
        case .closeAfterFlush(let id):
            guard peers[id.rawValue].isOpen else { return }
            require(broker.isClosing(id), "closeAfterFlush for \(id), which is not closing")
            guard !peers[id.rawValue].isClosing else { return }
            peers[id.rawValue].isClosing = true
            broker.closingBegan(on: id, into: &actions)
        case .close(let id):
            guard peers[id.rawValue].isOpen else { return }
            require(
                broker.isClosing(id) && !broker.hasOutput(id),
                "close for \(id), which has output or is not closing"
            )
            close(id.rawValue)
        case .watch(let id, let reading, _):
            guard peers[id.rawValue].isOpen else { return }
            // A watch for reading appended before a later action of the same buffer began closing the connection is
            // followed by closingBegan's own watch; reads check wantsInput meanwhile, as heraldd's do.
            peers[id.rawValue].watchesReading = reading
        case .readAgain(let id):
            guard peers[id.rawValue].isOpen, frames < FuzzLimits.maxFramesPerInput else { return }
            frames += broker.readBuffered(on: id, now: realtimeNow, into: &actions)
        case .handshakeEnded:
            break
        case .protocolViolation(let id, _):
            guard peers[id.rawValue].isOpen else { return }
            require(broker.isClosing(id), "a protocol violation left \(id) open")
        case .shedOutput:
            require(!broker.isOverGlobalBound, "still over the global bound after shedding")
        case .pluginRequest(let request):
            // As heraldd's supervisor does: every PLUGIN request is answered at once, known or not.
            let known = request.frame.action == .reload || request.frame.name == "session"
            let before = actions.count
            broker.answer(request, error: known ? nil : "no plugin is called \(request.frame.name)", into: &actions)
            require(
                known || actions.count > before || !peers[request.connection.rawValue].isOpen,
                "an unknown plugin left the asker open"
            )
        case .subscribed, .readAnotherRound, .wakeAt:
            break
        }
    }

    /// Writes up to `budget` bytes of the connection's output, in writes of at most `maxChunks` chunks,
    /// as `flush` does with writev, and reads them as the client would.
    mutating func write(_ slot: Int, budget: Int, maxChunks: Int) {
        guard peers[slot].isOpen else { return }
        let id = ConnectionID(slot)
        var left = budget
        while left > 0 {
            chunk.removeAll(keepingCapacity: true)
            var chunks = 0
            broker.pendingOutput(for: id, maxChunks: maxChunks) { bytes in
                require(!bytes.isEmpty, "pendingOutput offered an empty chunk")
                chunks += 1
                chunk.append(contentsOf: bytes.prefix(max(0, left - chunk.count)))
            }
            require(chunks <= maxChunks, "pendingOutput offered \(chunks) chunks, more than \(maxChunks)")
            if chunks == 0 { break }
            require(broker.hasOutput(id), "pendingOutput offered bytes but hasOutput is false")
            let written = chunk.count
            broker.didWrite(written, to: id)
            left -= written
            read(slot, written)
            checkInvariants()
            if written == 0 { break }
        }
        if !broker.hasOutput(id) {
            require(
                peers[slot].output.bufferedByteCount == 0 && peers[slot].handshake.isEmpty,
                "queue of \(id) is empty but the client holds \(peers[slot].output.bufferedByteCount) bytes of a frame"
            )
        }
        // Output left means the socket took no more: the budget is what the client read.
        broker.writesDone(on: id, socketFull: broker.hasOutput(id), now: realtimeNow, into: &actions)
        carryOutActions()
        readSocket(slot)
    }

    /// The client reads what was just written: it must decode, and keep wire.md's promises.
    ///
    /// As the Herald library does (Connection+Handshake.swift), the frames up to WELCOME are read one at a
    /// time with the default frame limit, and the rest with a decoder sized by WELCOME's maxPayload.
    mutating func read(_ slot: Int, _ count: Int) {
        if peers[slot].isGreeted {
            peers[slot].output.append(contentsOf: chunk.prefix(count))
        } else {
            peers[slot].handshake.append(contentsOf: chunk.prefix(count))
        }
        while !peers[slot].isGreeted {
            let bytes = peers[slot].handshake
            guard bytes.count >= 4 else { return }
            let length = Int(bytes[0]) | Int(bytes[1]) << 8 | Int(bytes[2]) << 16 | Int(bytes[3]) << 24
            require(
                length >= 2 && length <= Limits.maxFrameLength(maxPayload: Limits.defaultMaxPayload),
                "a frame of length \(length) before WELCOME on #\(slot)"
            )
            guard bytes.count >= 4 + length else { return }
            let frame: Frame
            do {
                frame = try Frame.decode(bytes[0..<4 + length], role: .client)
            } catch {
                fatalError("the daemon's output to #\(slot) does not decode (before WELCOME): \(error)")
            }
            peers[slot].handshake.removeFirst(4 + length)
            switch frame {
            case .welcome(let welcome):
                peers[slot].isGreeted = true
                peers[slot].output = FrameDecoder(role: .client, maxPayload: Int(welcome.maxPayload))
                peers[slot].output.version = welcome.version
            case .error:
                peers[slot].isGreeted = true
            default:
                break
            }
            if peers[slot].isGreeted {
                peers[slot].output.append(contentsOf: peers[slot].handshake)
                peers[slot].handshake = []
            }
            check(frame, on: slot)
        }
        while true {
            let frame: Frame?
            do {
                frame = try peers[slot].output.next()
            } catch {
                fatalError("the daemon's output to #\(slot) does not decode: \(error)")
            }
            guard let frame else { break }
            check(frame, on: slot)
        }
    }

    mutating func check(_ frame: Frame, on slot: Int) {
        require(!peers[slot].sawError, "#\(slot) got \(frame.type) after its final ERROR")
        if !peers[slot].sawWelcome {
            switch frame {
            case .welcome(let welcome):
                peers[slot].sawWelcome = true
                require(ProtocolVersion.supported.contains(welcome.version), "WELCOME with version \(welcome.version)")
                peers[slot].version = welcome.version
                require(Int(welcome.maxPayload) == FuzzLimits.maxPayload, "WELCOME with the wrong maxPayload")
            case .error:
                break
            default:
                // A DROPPED notice included: it goes right after the frame in flight, but never ahead of a WELCOME
                // not yet written, so a client that pipelined after HELLO (wire.md allows it) reads WELCOME first.
                requireFailure("#\(slot) got \(frame.type) before WELCOME")
            }
        } else if case .welcome = frame {
            requireFailure("a second WELCOME on #\(slot)")
        }
        switch frame {
        case .error(let error):
            require(error.reason.utf8.count <= Limits.maxReasonBytes, "ERROR reason too long")
            // Version 2: a refusal answers one request, names it or 0 (a POST with request 0), and is not final.
            if error.isRefusal {
                require(peers[slot].sawWelcome && peers[slot].version >= 2, "a refusal on #\(slot) before version 2")
                require(error.code.isRefusal, "REFUSAL set on \(error.code), a fatal code")
            } else {
                peers[slot].sawError = true
            }
        case .notify(let notify):
            require(notify.sequence >= 1 && notify.sequence <= status.posted, "NOTIFY of a post never made")
            if notify.retained {
                require(notify.subscription != 0, "retained NOTIFY for subscription 0")
            } else {
                require(notify.subscription == 0, "live NOTIFY names a subscription")
                require(
                    notify.sequence > peers[slot].lastLiveSequence,
                    "live NOTIFY \(notify.sequence) after \(peers[slot].lastLiveSequence) on #\(slot): not in post order"
                )
                peers[slot].lastLiveSequence = notify.sequence
                liveRead += 1
            }
        case .dropped(let dropped):
            require(dropped.count >= 1, "DROPPED with count 0")
            require(dropped.firstSequence <= dropped.lastSequence, "DROPPED with an inverted range")
            require(
                dropped.count <= dropped.lastSequence - dropped.firstSequence + 1,
                "DROPPED counts \(dropped.count) frames in a range of \(dropped.lastSequence - dropped.firstSequence + 1)"
            )
            require(dropped.lastSequence <= status.posted, "DROPPED of a post never made")
            droppedNoticed += dropped.count
        case .welcome:
            break
        case .ack(let ack):
            require(ack.sequence <= status.posted, "ACK of a sequence never assigned")
        case .namesReport, .statusReport:
            break
        case .hello, .post, .subscribe, .unsubscribe, .get, .ping, .status, .bye, .will, .monitor, .names, .plugin:
            requireFailure("the client decoder yielded a client frame")
        }
    }

    /// heraldd closes the connection: its output was written, the client hung up, or the close bound passed.
    mutating func close(_ slot: Int) {
        guard peers[slot].isOpen else { return }
        broker.connectionClosed(ConnectionID(slot), monotonicNow: monotonic)
        peers[slot].isOpen = false
        require(!broker.hasOutput(ConnectionID(slot)), "a closed connection has output")
        require(!broker.wantsInput(ConnectionID(slot)), "a closed connection wants input")
        checkInvariants()
    }

    /// The end of one turn of heraldd's loop (Sources/HeraldDaemon/Daemon.swift, run): due wills, the connections
    /// with new output written, the turn ended (the global bound, the wake-up for wills), paused input read.
    mutating func turn() {
        broker.postDueWills(monotonicNow: monotonic, realtimeNow: realtimeNow)
        broker.readRoundEnded(into: &actions)
        for action in actions { require(action == .readAnotherRound, "a round ended with \(action)") }
        actions.removeAll(keepingCapacity: true)
        broker.turnEnding(into: &actions)
        var ids: [ConnectionID] = []
        for action in actions {
            guard case .write(let id) = action else { requireFailure("turnEnding appended \(action)") }
            ids.append(id)
        }
        for id in ids { require(peers[id.rawValue].isOpen, "turnEnding named \(id), which is closed") }
        // Each once: heraldd writes them in one batch, where a connection listed twice would get its bytes twice.
        require(Set(ids).count == ids.count, "turnEnding named a connection twice: \(ids)")
        // A write can resume a paused connection's input, and that can close another listed one: skipped then.
        carryOutActions()
        broker.turnEnded(into: &actions)
        carryOutActions()
        for slot in peers.indices { readSocket(slot) }
        checkInvariants()
    }

    mutating func advanceClock(milliseconds: Int) {
        monotonic += UInt64(milliseconds) * 1_000_000
        let before = status.posted
        let posted = broker.postDueWills(monotonicNow: monotonic, realtimeNow: realtimeNow)
        require(status.posted == before + UInt64(posted), "postDueWills posted \(posted), STATUS moved differently")
        if let next = broker.nextWillDeadline { require(next > monotonic, "a due will was left pending") }
        checkInvariants()
    }

    mutating func shutDown() {
        guard !isShutDown else { return }
        isShutDown = true
        broker.shutDown(into: &actions)
        var closing = 0
        for action in actions {
            guard case .closeAfterFlush(let id) = action, peers[id.rawValue].isOpen else {
                requireFailure("shutDown appended \(action)")
            }
            closing += 1
        }
        require(closing == peers.filter(\.isOpen).count, "shutDown closes \(closing) connections, not every open one")
        carryOutActions()
        require(broker.nextWillDeadline == nil, "wills survive shutDown")
        for slot in peers.indices where peers[slot].isOpen {
            require(broker.isClosing(ConnectionID(slot)), "#\(slot) not closing after shutDown")
        }
        checkInvariants()
    }

    /// Drains every connection and closes them all, then checks nothing is left behind.
    mutating func finish() {
        turn()
        for slot in peers.indices where peers[slot].isOpen {
            peers[slot].isStalled = false
            write(slot, budget: Int.max, maxChunks: 64)
        }
        for slot in peers.indices { close(slot) }
        let report = status
        require(report.connections == 0, "\(report.connections) connections left open")
        require(report.subscriptions == 0, "\(report.subscriptions) subscriptions left")
        require(broker.accounting.bytes == 0, "\(broker.accounting.bytes) bytes of encoded frames leaked")
        broker.turnEnding(into: &actions)
        require(actions.isEmpty, "turnEnding named closed connections: \(actions)")
        // connectionsByUID is private: a uid's count that leaked shows as TOO_MANY_CONNECTIONS here.
        for slot in 0..<FuzzLimits.maxConnections {
            broker.connectionOpened(
                ConnectionID(slot),
                sender: Sender(pid: 1, uid: FuzzLimits.ownerUID, gid: 1),
                into: &actions
            )
            require(actions.isEmpty || isShutDown, "a closed connection still counts against its uid")
            actions.removeAll()
        }
    }

    // MARK: Invariants, through the broker's public API only (its internals change under refactoring)

    var status: Frame.StatusReport { broker.statusReport(request: 1) }

    /// Checks the broker's bookkeeping against what the fuzzer saw.
    mutating func checkInvariants() {
        let report = status
        var open = 0
        for slot in peers.indices {
            let id = ConnectionID(slot)
            guard peers[slot].isOpen else {
                guard peers[slot].wasOpened else { continue }
                require(!broker.hasOutput(id) && !broker.wantsInput(id), "closed \(id) has output or wants input")
                continue
            }
            open += 1
            if broker.wantsInput(id) {
                require(!broker.isClosing(id), "\(id) wants input while closing")
            }
            auditQueue(slot)
            // The pattern cost charged is its subscriptions', within the bound.
            let connection = broker.connections[slot]!
            let cost = connection.subscriptions.values.reduce(0) { $0 + $1.pattern.cost }
            require(
                connection.patternCost == cost,
                "\(id) is charged \(connection.patternCost), its patterns cost \(cost)"
            )
            require(cost <= FuzzLimits.maxPatternCost, "\(id)'s patterns cost \(cost), over the limit")
            // Coalescing's tombstones are counted exactly, and never at the front.
            let queue = broker.mailboxes[slot].queue
            var tombstones = 0
            for index in 0..<queue.entries.count where queue.entries[index].size == 0 { tombstones += 1 }
            require(
                tombstones == queue.coalesce.tombstones,
                "\(id) holds \(tombstones) tombstones, counts \(queue.coalesce.tombstones)"
            )
        }
        require(Int(report.connections) == open, "STATUS counts \(report.connections) connections, \(open) are open")
        require(
            Int(report.subscriptions) <= open * FuzzLimits.maxSubscriptions,
            "\(report.subscriptions) subscriptions on \(open) connections, over the limit of \(FuzzLimits.maxSubscriptions) each"
        )
        require(Int(report.retained) <= FuzzLimits.maxRetained, "\(report.retained) retained names, over the limit")
        require(
            report.delivered == liveRead,
            "STATUS counts \(report.delivered) delivered, the clients read \(liveRead)"
        )
        require(droppedNoticed <= report.dropped, "DROPPED notices count \(droppedNoticed), STATUS \(report.dropped)")
        require(broker.accounting.bytes >= 0, "negative frame accounting")
    }

    /// Walks the connection's queue with `pendingOutput` (as a write would) and checks its bound: the live
    /// NOTIFY frames queued never exceed `queueBytes`; only control frames, which are never dropped, may
    /// take a queue past it (wire.md, "The outgoing queue and slow subscribers").
    mutating func auditQueue(_ slot: Int) {
        let id = ConnectionID(slot)
        // The client holds the written part of a frame in flight; the queue offers the rest of it and then whole
        // frames, in ranges that may each hold several frames back to back. Together they are whole frames.
        var stream = peers[slot].handshake + peers[slot].output.buffer[peers[slot].output.start...]
        let inFlight = stream.count
        var chunks = 0
        broker.pendingOutput(for: id, maxChunks: Int.max) { bytes in
            chunks += 1
            require(!bytes.isEmpty, "pendingOutput offered an empty range")
            stream.append(contentsOf: bytes)
        }
        var total = 0
        var live = 0
        var offset = 0
        while offset < stream.count {
            require(stream.count - offset >= 6, "a queued frame of \(stream.count - offset) bytes")
            let length =
                Int(stream[offset]) | Int(stream[offset + 1]) << 8 | Int(stream[offset + 2]) << 16
                | Int(stream[offset + 3]) << 24
            require(offset + 4 + length <= stream.count, "the queue ends inside a frame of \(length + 4) bytes")
            // The frame in flight counts as control: its header may be written already.
            let isLive =
                stream[offset + 4] == FrameType.notify.rawValue && stream[offset + 5] & FrameFlags.retained == 0
            if offset >= inFlight && isLive { live += length + 4 }
            total += length + 4
            offset += 4 + length
        }
        require((chunks > 0) == broker.hasOutput(id), "hasOutput disagrees with pendingOutput for \(id)")
        require(
            total == broker.queuedBytes(id),
            "\(id): queuedBytes \(broker.queuedBytes(id)), the queue holds \(total)"
        )
        require(
            live <= FuzzLimits.queueBytes,
            "\(id) queues \(live) bytes of live NOTIFY, over its bound of \(FuzzLimits.queueBytes)"
        )
    }
}

/// Runs one script. Each command is one byte `c`: the connection is `c & 3`, the action `(c >> 2) % 10`,
/// then the action's arguments (Tests/Fuzz/README.md).
private func run(_ input: UnsafeBufferPointer<UInt8>) {
    var script = Script(bytes: input)
    var harness = Harness()
    var scratch: [UInt8] = []
    while !script.isAtEnd && harness.frames < FuzzLimits.maxFramesPerInput {
        let command = script.u8()
        let slot = Int(command & 3)
        switch (command >> 2) % 10 {
        case 0:  // open, u8 uid choice: 1 root, 2 a stranger, else the owner
            harness.open(slot, uidChoice: script.u8())
        case 1:  // feed raw bytes: u8 n, n bytes
            let bytes = script.take(Int(script.u8()))
            harness.feed(slot, UnsafeRawBufferPointer(bytes))
        case 2:  // feed one frame: u8 type, u8 flags, u8 n, n body bytes; the length prefix is n + 2
            let type = script.u8()
            let flags = script.u8()
            let body = script.take(Int(script.u8()))
            scratch.removeAll(keepingCapacity: true)
            let length = UInt32(body.count + 2)
            scratch.append(contentsOf: [UInt8(length & 0xff), UInt8(length >> 8 & 0xff), 0, 0, type, flags])
            scratch.append(contentsOf: body)
            scratch.withUnsafeBytes { harness.feed(slot, $0) }
        case 3:  // feed raw bytes: u16 n, n bytes
            let bytes = script.take(script.u16())
            harness.feed(slot, UnsafeRawBufferPointer(bytes))
        case 4:  // write: u8 budget (0: everything, else budget * 8 bytes), u8 maxChunks (1 + b % 8)
            let budget = Int(script.u8())
            let chunks = 1 + Int(script.u8() % 8)
            harness.write(slot, budget: budget == 0 ? Int.max : budget * 8, maxChunks: chunks)
        case 5:  // close: the client hung up (or the close bound passed)
            harness.close(slot)
        case 6:  // advance the clock by u16 * 100 ms and post due wills
            harness.advanceClock(milliseconds: script.u16() * 100)
        case 7:  // one turn of the loop: due wills, write dirty connections, the global bound
            harness.turn()
        case 8:  // repeat the last feed on this connection u8 + 1 times
            let times = Int(script.u8()) + 1
            let bytes = harness.lastFeed
            for _ in 0..<times where harness.frames < FuzzLimits.maxFramesPerInput {
                bytes.withUnsafeBytes { harness.feed(slot, $0) }
            }
        default:  // 9: stall or resume the client's reading (even connection bits), or shut down (c & 3 == 3)
            if slot == 3 {
                harness.shutDown()
            } else {
                harness.peers[slot].isStalled.toggle()
            }
        }
    }
    harness.finish()
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    run(UnsafeBufferPointer(start: data, count: size))
    return 0
}
