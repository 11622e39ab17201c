public import HeraldCommandLine
public import HeraldCore
import HeraldMQTT
public import HeraldPosix

/// The bridge between one Herald daemon and one MQTT broker: a plain Herald client on one side, an MQTT 5 client on
/// the other. Every event (a local notification, a packet, the broker connection's end, a deadline) goes through one
/// stream to one loop, which owns all the state. The loop runs on the Herald's reader thread, which also reads the
/// broker's socket while the Herald is connected; the deadlines, and the broker connection otherwise, are served by
/// ``BridgeIO``, an event loop that wakes only for something pending: nothing in the bridge ticks.
///
/// Loop-free: posts this process made are not exported (their sender pid is ours); MQTT subscriptions use No
/// Local; a message whose origin host is this host is not imported; a message seen before (same origin, daemon
/// and sequence) is not imported twice.
public final class Bridge {
    enum Event: Sendable {
        /// Notifications wait in `inbox`.
        case local
        case exporting(String)
        case link(generation: Int, LinkEvent)
        case reconnect(generation: Int)
        /// The state's deadline: a second after an event, post the state if it changed.
        case stateDue
    }

    enum LinkEvent: Sendable {
        /// The packets of one read, in their order.
        case packets([Packet])
        /// The connection ended; the reason is for the log.
        case closed(String)
    }

    /// The user properties an exported message carries.
    public enum UserPropertyName {
        public static let originHost = "herald-origin-host"
        public static let senderPID = "herald-sender-pid"
        public static let senderUID = "herald-sender-uid"
        public static let sequence = "herald-sequence"
        /// The origin daemon's pid: sequences start again when a daemon restarts, so it is part of a message's key.
        public static let daemonPID = "herald-daemon-pid"
    }

    let options: BridgeOptions
    let herald: Herald
    let mapping: TopicMapping
    let hostID: String
    let password: [UInt8]?
    let logger: Logger
    let ownPID = ProcessIdentity.currentPID()
    let stateName: String
    let importPatterns: [[Substring]]

    private let events: AsyncStream<Event>
    private let continuation: AsyncStream<Event>.Continuation
    /// The exported patterns' notifications, from Herald's reader thread to the loop.
    let inbox: LocalInbox<HeraldNotification>
    /// The QoS 0 messages read from the broker and not yet imported.
    let backlog: ImportBacklog
    /// What the loop has to write to the broker, handed to the link once per event (`flush`).
    var output: [UInt8] = []

    var link: MQTTLink?
    /// The broker connection's thread and the deadlines' loop, from `run`.
    private var io: BridgeIO?
    var generation = 0
    var connected = false
    var backoff = Duration.milliseconds(100)
    var queue: ExportQueue
    var importedKeys = RecentSet<ImportKey>(capacity: 65_536)
    var maxInflight = 100
    /// The packet identifiers of QoS 1 messages imported from the last read, whose PUBACK waits for heraldd
    /// (`acknowledgeImports`).
    var pendingAcknowledgements: [UInt16] = []
    var lastSubscribeIdentifier: UInt16 = 0
    var refused: UInt64 = 0
    /// Exported messages refused for the broker's Maximum Packet Size.
    var tooLarge: UInt64 = 0
    private var importDropsLogged: UInt64 = 0
    /// The broker's Maximum Packet Size from CONNACK; nil when it set none.
    var brokerMaximumPacketSize: Int?
    var exported: UInt64 = 0
    var imported: UInt64 = 0
    var loopsDropped: UInt64 = 0
    /// What became of each message from the broker.
    var imports = ImportCounts()
    /// The retained values this bridge stored for other hosts, bounded.
    var retainedImports: ImportedRetained
    var logLimiter = LogLimiter()
    /// The counts in the last state posted, so that only a change is posted.
    private var lastPostedState: [String: JSONValue] = [:]
    /// Whether `.stateDue` is scheduled.
    private var stateDueArmed = false

    /// Creates a bridge on a connected Herald.
    public init(
        options: BridgeOptions,
        herald: Herald,
        hostID: String,
        password: [UInt8]?,
        logger: Logger
    ) throws(UsageError) {
        guard let mapping = TopicMapping(prefix: options.prefix) else {
            throw UsageError(message: "--prefix '\(options.prefix)' is not a plain MQTT topic")
        }
        self.options = options
        self.herald = herald
        self.mapping = mapping
        self.hostID = hostID
        self.password = password
        self.logger = logger
        self.stateName = "bridge.mqtt.\(hostID)"
        self.importPatterns = options.imports.map { $0.split(separator: ".", omittingEmptySubsequences: false) }
        self.queue = ExportQueue(limit: options.queueLimit)
        self.retainedImports = ImportedRetained(
            maxCount: options.maxImportedRetained,
            maxBytes: options.maxImportedRetainedBytes
        )
        // Not the queue's limit: the inbox only hands over, and a burst larger than a small queue must still reach
        // the queue, which drops by its own rule. This bound is for a loop that stalls.
        self.inbox = LocalInbox(limit: max(options.queueLimit, Self.inboxLimit))
        self.backlog = ImportBacklog(messageLimit: options.queueLimit, byteLimit: Self.importByteLimit)
        (events, continuation) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .unbounded)
        for pattern in options.exports + options.imports {
            do {
                _ = try mapping.filter(forPattern: pattern)
            } catch {
                throw UsageError(message: "the pattern '\(pattern)' has no MQTT filter: \(error)")
            }
        }
    }

    /// The name of the retained state this bridge posts: `bridge.mqtt.HOSTID` (clients may not post under
    /// `herald.`).
    public static func stateName(hostID: String) -> String { "bridge.mqtt.\(hostID)" }

    /// Runs until the Herald connection is closed for good.
    public func run() async {
        let continuation = self.continuation
        let io: BridgeIO
        do {
            io = try BridgeIO(herald: herald) { event in
                switch event {
                case .packets(let generation, let packets):
                    continuation.yield(.link(generation: generation, .packets(packets)))
                case .closed(let generation, let reason):
                    continuation.yield(.link(generation: generation, .closed(reason)))
                case .deadline(.state):
                    continuation.yield(.stateDue)
                case .deadline(.reconnect(let generation)):
                    continuation.yield(.reconnect(generation: generation))
                }
            }
        } catch {
            logger.error("cannot start the bridge's event loop: \(error)")
            return
        }
        self.io = io
        defer { io.stop() }
        if !options.exports.isEmpty {
            let exports = options.exports
            let herald = self.herald
            let inbox = self.inbox
            // On the reader thread itself: a notification reaches the inbox with no hand-off, and the loop is woken
            // once for all that arrive before it runs. One stream for every export pattern: each post once, in the
            // order it was posted, whichever patterns it matches; a stream per pattern exported posts matching
            // different patterns out of their order, and one matching two of them twice.
            Task(executorPreference: herald.taskExecutor) {
                do {
                    // Not its own posts: the imports would come back here, crowd its queue in heraldd during a
                    // flood and push out the posts it is to export.
                    let notifications = try await herald.notifications(matching: exports, excludingOwnPosts: true)
                    for pattern in exports { continuation.yield(.exporting(pattern)) }
                    for await notification in notifications where inbox.append(notification) {
                        continuation.yield(.local)
                    }
                } catch {
                    let patterns = exports.joined(separator: ", ")
                    continuation.yield(
                        .link(generation: -1, .closed("the subscription to \(patterns) ended: \(error)"))
                    )
                }
            }
        }
        await postState()
        connect()
        for await event in events {
            await handle(event)
            flush()
            if case .stateDue = event { continue }
            // The counts changed, or may have: posted a second from now at most, once for all events until then.
            // Armed only after an event, so an idle bridge has nothing scheduled.
            if !stateDueArmed {
                stateDueArmed = true
                io.schedule(.state, after: .seconds(1))
            }
        }
    }

    private func handle(_ event: Event) async {
        switch event {
        case .local:
            await export(inbox.take())
        case .exporting(let pattern):
            logger.notice("exporting \(pattern)")
        case .link(let eventGeneration, let linkEvent):
            if eventGeneration == -1, case .closed(let reason) = linkEvent {
                logger.error(reason)
                return
            }
            switch linkEvent {
            case .packets(let packets):
                for packet in packets {
                    if eventGeneration == generation { await received(packet) }
                    backlog.handled(packet)
                }
                await acknowledgeImports()
            case .closed(let reason):
                if eventGeneration == generation { await linkClosed(reason) }
            }
        case .reconnect(let eventGeneration):
            if eventGeneration == generation && link == nil { connect() }
        case .stateDue:
            stateDueArmed = false
            // The counts, at most once a second and only when they changed: bridge.mqtt.HOSTID follows a flood.
            if state() != lastPostedState { await postState() }
            let importDropped = backlog.dropped
            if importDropped > importDropsLogged {
                // Counted where the broker's input is read; said here, once a second at most.
                logger.warning("importing cannot keep up: \(importDropped) QoS 0 messages dropped so far")
                importDropsLogged = importDropped
            }
        }
    }

    // MARK: The broker connection

    private func connect() {
        guard let io else { return }
        generation += 1
        let current = generation
        var willProperties = Properties()
        willProperties.userProperties = [UserProperty(UserPropertyName.originHost, hostID)]
        let connect = Packet.Connect(
            // The pid keeps a second bridge on this host from taking this one's session over.
            clientIdentifier: "herald-\(hostID)-\(ownPID)",
            // Never Clean Start, not even the first time: the pid makes the identifier new anyway, and mosquitto
            // (2.0.11, persist_write) saves across its own restart only the sessions begun without Clean Start, so a
            // broker restart would otherwise forget our subscriptions and answer our QoS 1 with No matching
            // subscribers until we subscribe again.
            cleanStart: false,
            keepAlive: options.keepAlive,
            properties: {
                var properties = Properties()
                // Kept for 5 minutes, the session holds QoS 1 messages for this bridge while it reconnects.
                properties.sessionExpiryInterval = 300
                properties.receiveMaximum = 1000
                properties.maximumPacketSize = UInt32(Self.maximumPacketSize)
                return properties
            }(),
            will: Packet.Will(
                topic: mapping.presenceTopic(hostID: hostID),
                payload: Array("false".utf8),
                qos: qos,
                retain: true,
                properties: willProperties
            ),
            username: options.username,
            password: password
        )
        output.removeAll()
        let first: [UInt8]
        do {
            first = try Packet.connect(connect).encode()
        } catch {
            logger.error("cannot encode CONNECT: \(error)")
            scheduleReconnect()
            return
        }
        io.connect(
            generation: current,
            BridgeIO.Settings(
                host: options.host,
                port: options.port,
                first: first,
                maximumPacketSize: Self.maximumPacketSize,
                keepAlive: options.keepAlive,
                backlog: backlog,
                started: SystemClock.monotonicNanoseconds()
            )
        )
        link = MQTTLink(io: io, generation: current)
    }

    /// The largest packet accepted from the broker: a Herald payload is at most a few MiB.
    static let maximumPacketSize = 16 << 20
    /// The least number of notifications the inbox holds for the loop.
    static let inboxLimit = 10_000
    /// The payload bytes of QoS 0 messages that may wait to be imported (`ImportBacklog`).
    ///
    /// Bounded in time as well as memory: every message waiting is posted before one read after it, so this is the
    /// delay a flood of large messages adds to the next remote post. 64 MiB of 60 KB messages took 1 to 2.7 s to
    /// post on a loaded 2-core machine (a debug build, MQTTBridgeFloodTests), past the 1 s a remote post may take;
    /// 4 MiB is a sixteenth of that. A flood larger than heraldd takes in is dropped as it is read either way, and
    /// counted (`importDropped`); this only says how much of it waits.
    static let importByteLimit = 4 << 20

    var qos: QoS { options.qos == 0 ? .atMostOnce : .atLeastOnce }

    /// Encodes `packet` for the next `flush`.
    func send(_ packet: Packet) {
        guard link != nil else { return }
        do {
            try packet.encode(into: &output)
        } catch {
            logger.error("cannot encode \(packet.type): \(error)")
        }
    }

    /// Writes everything encoded since the last flush in one `send`, from this thread: no hand-off to another.
    func flush() {
        guard let link, !output.isEmpty else { return }
        link.send(output)
        output.removeAll(keepingCapacity: true)
    }

    func linkClosed(_ reason: String) async {
        let wasConnected = connected
        link = nil
        connected = false
        logger.warning("mqtt://\(options.host):\(options.port): \(reason); retrying in \(backoff)")
        scheduleReconnect()
        if wasConnected { await postState() }
    }

    private func scheduleReconnect() {
        let delay = backoff
        backoff = min(backoff * 2, .seconds(30))
        io?.schedule(.reconnect(generation: generation), after: delay)
    }

    // MARK: State

    /// The bridge's state, as `bridge.mqtt.HOSTID` holds it.
    func state() -> [String: JSONValue] {
        var refusedByHerald: [String: JSONValue] = [:]
        for (code, count) in herald.refusedPostsByWireCode {
            refusedByHerald[HeraldError.wireCodeName(code)] = .number(Double(count))
        }
        let counts = imports
        return [
            "connected": .bool(connected),
            "queued": .number(Double(queue.waitingCount + queue.inflightCount)),
            "dropped": .number(Double(queue.dropped + inbox.dropped)),
            "importDropped": .number(Double(backlog.dropped)),
            "refused": .number(Double(refused)),
            "tooLarge": .number(Double(tooLarge)),
            "exported": .number(Double(exported)),
            "imported": .number(Double(imported)),
            "broker": .string("mqtt://\(options.host):\(options.port)"),
            "import": .object([
                "received": .number(Double(counts.received)),
                "posted": .number(Double(counts.posted)),
                "retainedAsLive": .number(Double(counts.retainedAsLive)),
                "loops": .number(Double(counts.loops)),
                "duplicates": .number(Double(counts.duplicates)),
                "unmatched": .number(Double(counts.unmatched)),
                "invalidName": .number(Double(counts.invalidName)),
                "reservedName": .number(Double(counts.reservedName)),
                "payloadTooLarge": .number(Double(counts.payloadTooLarge)),
                "failed": .number(Double(counts.failed)),
                "refusedByHerald": .object(refusedByHerald),
                "retainedHeld": .number(Double(retainedImports.count)),
            ]),
        ]
    }

    /// Posts ``state()`` as the retained `bridge.mqtt.HOSTID`.
    ///
    /// Not acknowledged: waiting for heraldd's answer behind a flood would stall the bridge. A refusal of it (it
    /// replaces the bridge's own value, so only a store already full of bytes refuses it) is counted with the
    /// others in `refusedByHerald`.
    func postState() async {
        let state = state()
        lastPostedState = state
        do {
            try await herald.post(stateName, payload: JSONValue.encodeObject(state), retain: true)
        } catch {
            logLimited("state", "cannot post \(stateName): \(error)")
        }
    }
}
