public import HeraldWire

/// The daemon's decisions, as a state machine with no I/O: connections and their handshake,
/// subscriptions and matching, retained values, and each connection's bounded outgoing queue.
///
/// Its owner feeds it events (`connectionOpened`, `frameReceived`, `inputFailed`,
/// `connectionClosed`, `shutDown`) and acts on what it returns and on `takeDirty`: write the
/// pending output of the connections named, close a connection once its output is written. The
/// broker reads no clock (the owner passes `now`) and never blocks.
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
        public var maxPayload: Int = Limits.defaultMaxPayload
        public var maxSubscriptions: Int = Limits.defaultMaxSubscriptions
        public var maxRetained: Int = Limits.defaultMaxRetained
        public var queueBytes: Int = Limits.defaultQueueBytes

        public init(ownerUID: UInt32, daemonPID: Int32, server: String, startTime: UInt64) {
            self.ownerUID = ownerUID
            self.daemonPID = daemonPID
            self.server = server
            self.startTime = startTime
        }
    }

    /// What the owner must do after an event, besides writing dirty connections' output.
    public enum Action: Equatable, Sendable {
        case none
        /// Stop reading this connection, write what is queued for it (within the shutdown bound),
        /// then close it.
        case closeAfterFlush
    }

    enum Phase {
        case awaitingHello
        case ready
        case closing
    }

    struct Connection {
        let sender: Sender
        var phase: Phase = .awaitingHello
        var client = ""
        var subscriptions: [UInt32: Pattern] = [:]
        var queue: OutboundQueue
        /// The last post queued here, so a post matching several subscriptions is queued once.
        var lastSequence: UInt64 = 0
        var isDirty = false
        var isUrgent = false
    }

    struct Retained {
        let notify: Frame.Notify
    }

    public let configuration: Configuration
    var connections: [Connection?] = []
    var openConnections = 0
    var index = PatternIndex<ConnectionID>()
    var retained: [String: Retained] = [:]
    var lastSequence: UInt64 = 0
    var subscriptionCount = 0
    var posted: UInt64 = 0
    var delivered: UInt64 = 0
    var dropped: UInt64 = 0
    var dirty: [ConnectionID] = []
    /// Connections whose queue passed half its bound since the owner last wrote them.
    var urgent: [ConnectionID] = []
    /// Reused for each post's matches, so matching allocates nothing once warm.
    var matches: [ConnectionID] = []

    /// Creates a broker with no connections.
    public init(configuration: Configuration) {
        self.configuration = configuration
    }

    /// A new connection was accepted from `sender`.
    public mutating func connectionOpened(_ id: ConnectionID, sender: Sender) -> Action {
        if id.rawValue >= connections.count {
            connections.append(contentsOf: repeatElement(nil, count: id.rawValue + 1 - connections.count))
        }
        precondition(connections[id.rawValue] == nil, "connection \(id) opened twice")
        connections[id.rawValue] = Connection(sender: sender, queue: OutboundQueue(limit: configuration.queueBytes))
        openConnections += 1
        if sender.uid != configuration.ownerUID && sender.uid != 0 {
            return fail(
                id,
                WireError(
                    .permissionDenied,
                    "uid \(sender.uid) may not use this daemon, which belongs to uid \(configuration.ownerUID)"
                )
            )
        }
        return .none
    }

    /// The connection's input broke the protocol (the decoder threw): answer with the error, then close.
    public mutating func inputFailed(_ error: WireError, on id: ConnectionID) -> Action {
        guard connections[id.rawValue]?.phase != .closing else { return .closeAfterFlush }
        return fail(id, error)
    }

    /// The connection is gone: its subscriptions end and its queue is freed. Call it before reusing `id`.
    public mutating func connectionClosed(_ id: ConnectionID) {
        guard var connection = connections[id.rawValue] else {
            preconditionFailure("connection \(id) closed but not open")
        }
        for pattern in connection.subscriptions.values {
            index.remove(pattern, for: id)
        }
        subscriptionCount -= connection.subscriptions.count
        connection.queue.removeAll()
        connections[id.rawValue] = nil
        openConnections -= 1
    }

    /// The daemon is stopping: every connection gets a final `SHUTTING_DOWN` error after what is already
    /// queued for it.
    public mutating func shutDown() {
        for slot in connections.indices {
            guard let connection = connections[slot], connection.phase != .closing else { continue }
            _ = fail(ConnectionID(slot), WireError(.shuttingDown, "heraldd is shutting down"))
        }
    }

    /// Whether the owner should read this connection now: false while it is closing, and while its
    /// unanswered control frames are over the queue bound (back-pressure on a client that does not read).
    public func wantsInput(_ id: ConnectionID) -> Bool {
        guard let connection = connections[id.rawValue] else { return false }
        return connection.phase != .closing && !connection.queue.isOverControlLimit
    }

    /// Whether anything is queued for the connection.
    public func hasOutput(_ id: ConnectionID) -> Bool {
        connections[id.rawValue].map { !$0.queue.isEmpty } ?? false
    }

    /// Whether the connection is closing (after an error or `BYE`).
    public func isClosing(_ id: ConnectionID) -> Bool {
        connections[id.rawValue]?.phase == .closing
    }

    /// Bytes queued for the connection.
    public func queuedBytes(_ id: ConnectionID) -> Int {
        connections[id.rawValue]?.queue.queuedBytes ?? 0
    }

    /// Moves the connections that got new output since the last call into `ids` (appended, each once).
    ///
    /// The list is handed out rather than walked with a callback, so the owner can write, and so change
    /// the broker, for each of them.
    public mutating func takeDirty(into ids: inout [ConnectionID]) {
        for id in dirty where connections[id.rawValue] != nil {
            connections[id.rawValue]!.isDirty = false
            ids.append(id)
        }
        dirty.removeAll(keepingCapacity: true)
    }

    /// Whether some connection's queue passed half its bound while frames were processed: the owner
    /// should write those connections now, before the rest of its read batch, so the socket buffer takes
    /// the output before the queue has to drop any of it.
    public var hasUrgentOutput: Bool { !urgent.isEmpty }

    /// Moves the connections whose queue passed half its bound into `ids` (appended, each once).
    ///
    /// A connection is reported again only after its queue has drained below half: one whose socket is
    /// full waits for writability like any other instead of costing a failed write per post.
    public mutating func takeUrgent(into ids: inout [ConnectionID]) {
        for id in urgent where connections[id.rawValue] != nil {
            ids.append(id)
        }
        urgent.removeAll(keepingCapacity: true)
    }

    /// Calls `body` with the connection's next bytes to write, in order, at most `maxChunks` of them.
    /// The memory stays valid until the next call that changes the broker.
    public mutating func pendingOutput(
        for id: ConnectionID,
        maxChunks: Int,
        _ body: (UnsafeRawBufferPointer) -> Void
    ) {
        connections[id.rawValue]?.queue.pendingChunks(maxChunks: maxChunks, body)
    }

    /// Records that `byteCount` bytes of the connection's pending output were written.
    public mutating func didWrite(_ byteCount: Int, to id: ConnectionID) {
        guard byteCount > 0, connections[id.rawValue] != nil else { return }
        let written = connections[id.rawValue]!.queue.didWrite(byteCount)
        delivered += UInt64(written.notifications)
        let queue = connections[id.rawValue]!.queue
        if queue.queuedBytes * 2 <= queue.limit { connections[id.rawValue]!.isUrgent = false }
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

    // MARK: Internals shared with Broker+Frames

    mutating func enqueueControl(_ frame: Frame, to id: ConnectionID) {
        connections[id.rawValue]!.queue.enqueueControl(EncodedFrame(frame))
        markDirty(id)
    }

    mutating func markDirty(_ id: ConnectionID) {
        if !connections[id.rawValue]!.isDirty {
            connections[id.rawValue]!.isDirty = true
            dirty.append(id)
        }
    }

    /// Queues a final `ERROR` and marks the connection closing.
    mutating func fail(_ id: ConnectionID, _ error: WireError) -> Action {
        enqueueControl(.error(error), to: id)
        connections[id.rawValue]!.phase = .closing
        return .closeAfterFlush
    }
}
