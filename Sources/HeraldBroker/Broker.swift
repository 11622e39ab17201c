public import HeraldWire

/// The daemon's decisions, as a state machine with no I/O: connections and their handshake,
/// subscriptions and matching, retained values, wills, and each connection's bounded outgoing queue.
///
/// An event loop feeds it events as they happen (Broker+Events.swift: `connectionOpened`, `bytesRead`,
/// `writesDone`, `turnEnding`, `turnEnded`, and `connectionClosed`, `postDueWills`, `shutDown`), and each appends
/// what the owner must do into the owner's reused buffer of ``BrokerAction``s: write a connection, watch it for
/// reading or writing, close it after its output or now, wake at a time. The owner asks one thing only: the bytes to
/// write after a ``BrokerAction/write(_:)`` (``pendingOutput(for:maxChunks:maxBytes:_:)``). The broker reads no
/// clock (the owner passes the time) and never blocks.
public struct Broker {
    /// The daemon's limits and identity.
    public struct Configuration: Sendable {
        /// The uid that owns the daemon; peers with another uid, except root, are refused.
        public var ownerUID: UInt32
        public var daemonPID: Int32
        /// The daemon's name and version, sent in `WELCOME`.
        public var server: String
        /// When the daemon started, in nanoseconds since 1970.
        public var startTime: UInt64
        public var bounds = Bounds()
        /// The highest protocol version the daemon speaks: 1 makes it a version 1 daemon, which tests of the
        /// library's compatibility need.
        public var maxVersion: UInt16 = ProtocolVersion.supported.upperBound

        public init(ownerUID: UInt32, daemonPID: Int32, server: String, startTime: UInt64) {
            self.ownerUID = ownerUID
            self.daemonPID = daemonPID
            self.server = server
            self.startTime = startTime
        }
    }

    /// The bounds an owner may set (wire.md, "Limits"; heraldd's flags), each with the protocol's default.
    public struct Bounds: Sendable {
        public var maxPayload: Int = Limits.defaultMaxPayload
        /// The longest name or pattern accepted, at most the protocol's 255 bytes.
        public var maxNameBytes: Int = Limits.maxNameBytes
        public var maxSubscriptions: Int = Limits.defaultMaxSubscriptions
        /// The pattern cost (``Pattern/cost``) one connection's subscriptions may hold together.
        public var maxPatternCost: Int = Limits.defaultMaxPatternCost
        public var maxRetained: Int = Limits.defaultMaxRetained
        /// The bytes of all retained values' names and payloads together (`--max-retained-bytes`).
        public var maxRetainedBytes: Int = Limits.defaultMaxRetainedBytes
        /// Wills held, registered or pending, in all (`--max-wills`).
        public var maxWills: Int = Limits.defaultMaxWills
        /// The bytes of those wills' names and payloads together (`--max-will-bytes`).
        public var maxWillBytes: Int = Limits.defaultMaxWillBytes
        /// The most names a `NAMES` answer may list.
        public var maxNames: Int = Limits.defaultMaxNames
        public var queueBytes: Int = Limits.defaultQueueBytes
        public var maxConnections: Int = Limits.defaultMaxConnections
        public var maxQueuedBytes: Int = Limits.defaultMaxQueuedBytes

        public init() {}
    }

    /// What one frame asks of its connection, inside the broker: ``Broker+Events`` turns it into
    /// ``BrokerAction``s for the owner.
    enum Action: Equatable, Sendable {
        case none
        /// Stop reading this connection, write what is queued for it (within the close bound), then
        /// close it.
        case closeAfterFlush
    }

    @usableFromInline
    enum Phase {
        /// The slot holds no open connection.
        case closed
        case awaitingHello
        case ready
        case closing
    }

    struct Subscription {
        let pattern: Pattern
        let overflow: OverflowPolicy
        /// Version 2's `NO_LOCAL`: posts made on this connection do not match it.
        var noLocal = false
        /// Whether `MONITOR` made it: it is in the index as `**`, but `NAMES` `COUNTS` does not count it.
        var isMonitor = false
    }

    /// What the broker knows of one open connection besides its `Mailbox`.
    struct Connection {
        var client = ""
        var subscriptions: [UInt32: Subscription] = [:]
        /// The sum of its subscriptions' pattern costs, bounded by `maxPatternCost`.
        var patternCost = 0
        /// Whether the client said `BYE`: then its will is not posted.
        var saidGoodbye = false
        var will: Frame.Will?
        /// The id of `will` in the state log (Broker+State).
        var willID: UInt64 = 0
        /// While retained values are replayed to the connection, what is left to send and the live posts held
        /// meanwhile (Broker+Replay). Boxed: most connections never need it, and each slot stays small.
        var replay: ReplayState?
    }

    struct Retained {
        let notify: Frame.Notify
    }

    public let configuration: Configuration
    var connections: [Connection?] = []
    /// Indexed like `connections`; a closed slot's mailbox is `.closed` and empty.
    @usableFromInline var mailboxes: [Mailbox] = []
    var openConnections = 0
    var connectionsByUID: [UInt32: Int] = [:]
    var index = PatternIndex<ConnectionID>()
    var retained: [String: Retained] = [:]
    /// The retained values' names in post order, for replays.
    var retainedLog = RetainedLog()
    /// The bytes of every retained value's name and payload: what `maxRetainedBytes` bounds.
    var retainedBytes = 0
    /// The bytes the retained values' origins take in their state records: for ``durableBytes``.
    var retainedOriginBytes = 0
    var lastSequence: UInt64 = 0
    var subscriptionCount = 0
    /// Live `MONITOR` subscriptions: each matches every name as its `**`, so `NAMES` `COUNTS` takes them off.
    var monitorCount = 0
    var posted: UInt64 = 0
    var delivered: UInt64 = 0
    var dropped: UInt64 = 0
    @usableFromInline var dirty: [ConnectionID] = []
    /// Connections whose queue passed half its bound and has not drained below half since.
    @usableFromInline var urgent: [ConnectionID] = []
    /// The memory of every queue's own buffer: what `--max-queued-bytes` bounds.
    public let accounting = OutputAccounting()
    /// Where a turn's live posts are encoded, once each, for every subscriber's queue to send from.
    ///
    /// A `Broker` shares its arena (and its `accounting`) with its copies: use one copy at a time.
    let arena: FrameArena
    /// Bytes of the arena used this turn.
    var arenaUsed = 0
    /// Connections with frames in the arena: what `endTurn()` settles.
    var arenaHolders: [ConnectionID] = []
    /// Wills whose connection ended without `BYE`, by when they are due.
    @usableFromInline var pendingWills = DeadlineHeap<PendingWill>()
    /// Wills held, registered on open connections or pending, and the bytes of their names and payloads: what
    /// `maxWills` and `maxWillBytes` bound.
    var willCount = 0
    var willBytes = 0
    /// The id of the last will registered or restored (Broker+State).
    var lastWillID: UInt64 = 0
    /// Records of changes to the durable state, for the owner's log (Broker+State).
    @usableFromInline var stateJournal = StateJournal()
    /// Wills restored from a log whose connection was open when the log ended, by what a client coming back
    /// registers again.
    var orphanedWills: [OrphanKey: PendingWill] = [:]
    /// Restored wills withdrawn because their client came back, still in `pendingWills` until due.
    var cancelledWills: Set<UInt64> = []
    /// `PLUGIN` requests waiting for the daemon's supervisor (`takePluginRequests`).
    var pluginRequests: [PluginRequest] = []
    /// Patterns subscribed since the daemon last asked, when it asks (`reportsSubscriptions`).
    var subscribedPatterns: [Pattern] = []
    /// Whether the daemon wants to hear of new subscriptions: it does while a plugin waits for one to start.
    public var reportsSubscriptions = false
    var isShuttingDown = false
    /// Each connection's partial input, indexed like `mailboxes` (``bytesRead(_:on:now:into:)``).
    var decoders: [FrameDecoder] = []
    /// The will deadline last announced with ``BrokerAction/wakeAt(_:)``.
    var announcedWillDeadline: UInt64?
    /// Frames handled since the last ``turnEnding(into:)``, for ``readRoundEnded(into:)``.
    var framesThisTurn = 0
    /// How many frames a turn must have handled before another round of reads is worth more than writing now.
    public static let framesForAnotherRound = 16

    /// Creates a broker with no connections.
    public init(configuration: Configuration) {
        self.configuration = configuration
        arena = FrameArena(
            capacity: max(1 << 20, 4 + Limits.maxFrameLength(maxPayload: configuration.bounds.maxPayload))
        )
    }

    /// A new connection was accepted from `sender` (``connectionOpened(_:sender:into:)`` is the owner's event).
    mutating func connectionOpened(_ id: ConnectionID, sender: Sender) -> Action {
        if id.rawValue >= connections.count {
            let added = id.rawValue + 1 - connections.count
            connections.append(contentsOf: repeatElement(nil, count: added))
            mailboxes.append(
                contentsOf: repeatElement(
                    Mailbox(queueLimit: configuration.bounds.queueBytes, accounting: accounting, arena: arena),
                    count: added
                )
            )
        }
        if id.rawValue >= decoders.count {
            decoders.append(
                contentsOf: repeatElement(FrameDecoder(role: .daemon), count: id.rawValue + 1 - decoders.count)
            )
        }
        precondition(connections[id.rawValue] == nil, "connection \(id) opened twice")
        decoders[id.rawValue] = FrameDecoder(role: .daemon, maxPayload: configuration.bounds.maxPayload)
        connections[id.rawValue] = Connection()
        mailboxes[id.rawValue].phase = .awaitingHello
        mailboxes[id.rawValue].sender = sender
        openConnections += 1
        connectionsByUID[sender.uid, default: 0] += 1
        if sender.uid != configuration.ownerUID && sender.uid != 0 {
            return fail(
                id,
                WireError(
                    .permissionDenied,
                    "uid \(sender.uid) may not use this daemon, which belongs to uid \(configuration.ownerUID)"
                )
            )
        }
        if connectionsByUID[sender.uid]! > configuration.bounds.maxConnections {
            return fail(
                id,
                WireError(
                    .tooManyConnections,
                    "uid \(sender.uid) already holds \(configuration.bounds.maxConnections) connections, the limit"
                )
            )
        }
        return .none
    }

    /// The connection's input broke the protocol (the decoder threw): answer with the error, then close.
    mutating func inputFailed(_ error: WireError, on id: ConnectionID) -> Action {
        guard mailboxes[id.rawValue].phase != .closing else { return .closeAfterFlush }
        return fail(id, error)
    }

    /// The connection is gone: its subscriptions end, its queue is freed, and its will, if it did not say
    /// `BYE`, is scheduled. Call it before reusing `id`.
    ///
    /// - Parameter monotonicNow: The owner's monotonic clock, nanoseconds; wills are due relative to it.
    public mutating func connectionClosed(_ id: ConnectionID, monotonicNow: UInt64 = 0) {
        guard let connection = connections[id.rawValue] else {
            preconditionFailure("connection \(id) closed but not open")
        }
        for subscription in connection.subscriptions.values {
            index.remove(subscription.pattern, for: id)
        }
        subscriptionCount -= connection.subscriptions.count
        monitorCount -= connection.subscriptions.values.reduce(0) { $0 + ($1.isMonitor ? 1 : 0) }
        let sender = mailboxes[id.rawValue].sender
        mailboxes[id.rawValue] = Mailbox(
            queueLimit: configuration.bounds.queueBytes,
            accounting: accounting,
            arena: arena
        )
        connections[id.rawValue] = nil
        decoders[id.rawValue] = FrameDecoder(role: .daemon)
        openConnections -= 1
        connectionsByUID[sender.uid] = connectionsByUID[sender.uid]! > 1 ? connectionsByUID[sender.uid]! - 1 : nil
        if let will = connection.will {
            if !connection.saidGoodbye && !isShuttingDown {
                schedule(
                    will,
                    from: sender,
                    id: connection.willID,
                    client: connection.client,
                    monotonicNow: monotonicNow
                )
            } else {
                charge(will, -1)
                // A will of a connection the daemon closes as it stops stays in the log: the next daemon posts it
                // unless its client comes back.
                if connection.saidGoodbye { willEnded(connection.willID) }
            }
        }
    }

    /// The daemon is stopping: every connection gets a final `SHUTTING_DOWN` error after what is already
    /// queued for it (one already closing keeps its own final error), and a ``BrokerAction/closeAfterFlush(_:)``;
    /// pending wills are discarded (wire.md, `WILL`).
    public mutating func shutDown(into actions: inout [BrokerAction]) {
        isShuttingDown = true
        // Pending wills stay in the state log, for the next daemon to post.
        for pending in pendingWills.elements where !cancelledWills.contains(pending.id) { charge(pending.will, -1) }
        pendingWills.removeAll()
        cancelledWills.removeAll()
        orphanedWills.removeAll()
        for slot in mailboxes.indices where mailboxes[slot].phase != .closed {
            if mailboxes[slot].phase != .closing {
                _ = fail(ConnectionID(slot), WireError(.shuttingDown, "heraldd is shutting down"))
            }
            actions.append(.closeAfterFlush(ConnectionID(slot)))
        }
    }

    /// Whether the owner should read this connection now: false while it is closing, while its
    /// unanswered control frames are over the queue bound (back-pressure on a client that does not read),
    /// and while it is being sent retained values, which it gets as it reads them.
    /// The daemon's global bound never stops reading: `relieveGlobalBound` sheds the connections that hold
    /// the memory instead.
    // Inlinable, like the other queries the daemon asks per frame: a call into another module on the daemon's
    // `broker` property would copy the whole broker to pass it. And always inlined: left to itself the compiler
    // called it from some of the daemon's functions, each call with a 321-byte copy of the broker (callgrind).
    @inlinable @inline(__always)
    public func wantsInput(_ id: ConnectionID) -> Bool {
        let phase = mailboxes[id.rawValue].phase
        return phase != .closed && phase != .closing && !mailboxes[id.rawValue].queue.isOverControlLimit
            && !mailboxes[id.rawValue].isReplaying
    }

    /// The daemon's counters, as `STATUS_REPORT` carries them.
    public func statusReport(request: UInt32) -> Frame.StatusReport {
        Frame.StatusReport(
            request: request,
            pid: configuration.daemonPID,
            startTime: configuration.startTime,
            connections: UInt32(openConnections),
            subscriptions: UInt32(subscriptionCount),
            retained: UInt32(retained.count),
            posted: posted,
            delivered: delivered,
            dropped: dropped
        )
    }

    // MARK: Internals shared with the extensions

    mutating func enqueueControl(_ frame: Frame, to id: ConnectionID) {
        if mailboxes[id.rawValue].enqueueControl(frame) {
            dirty.append(id)
        }
    }

    /// Queues a final `ERROR` and marks the connection closing: a fatal error, or any error in version 1 (a refusal
    /// goes through ``refuse(_:_:)``).
    mutating func fail(_ id: ConnectionID, _ error: WireError) -> Action {
        if mailboxes[id.rawValue].isReplaying { abandonReplays(of: id) }
        enqueueControl(.error(error), to: id)
        mailboxes[id.rawValue].phase = .closing
        return .closeAfterFlush
    }

    /// Sets the connection's overflow policy to the strictest of its subscriptions'.
    mutating func updatePolicy(of id: ConnectionID) {
        let policy = connections[id.rawValue]!.subscriptions.values.map(\.overflow).max() ?? .dropOldest
        mailboxes[id.rawValue].queue.setPolicy(policy)
        connections[id.rawValue]!.replay?.held.setPolicy(policy)
    }
}
