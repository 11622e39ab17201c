import Foundation
public import Herald
import HeraldMQTT
public import HeraldPosix

/// The bridge between one Herald daemon and one MQTT broker: a plain Herald client on one side, an MQTT 5 client on
/// the other. Every event (a local notification, a packet, the broker connection's end, a timer) goes through one
/// stream to one loop, which owns all the state.
///
/// Loop-free: posts this process made are not exported (their sender pid is ours); MQTT subscriptions use No
/// Local; a message whose origin host is this host is not imported; a message seen before (same origin, daemon
/// and sequence) is not imported twice.
public final class Bridge {
    enum Event: Sendable {
        case local(HeraldNotification)
        case exporting(String)
        case link(generation: Int, MQTTLink.Event)
        case reconnect(generation: Int)
        case tick
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

    /// The member added to an imported JSON object payload, with the origin's host, pid, uid and sequence.
    public static let originMember = "heraldOrigin"

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

    private var link: MQTTLink?
    private var generation = 0
    private var connected = false
    private var backoff = Duration.milliseconds(100)
    private var queue: ExportQueue
    private var exportedSequences = RecentSet<UInt64>(capacity: 65_536)
    private var importedKeys = RecentSet<String>(capacity: 65_536)
    private var maxInflight = 100
    /// The Keep Alive in force: ours, or the broker's Server Keep Alive, which overrides it (§3.2.2.3.14).
    private var keepAliveSeconds: UInt16 = 0
    private var lastSent = ContinuousClock.now
    private var pingSent: ContinuousClock.Instant?
    private var lastSubscribeIdentifier: UInt16 = 0
    private var refused: UInt64 = 0
    private var exported: UInt64 = 0
    private var imported: UInt64 = 0
    private var loopsDropped: UInt64 = 0

    /// Creates a bridge on a connected Herald.
    public init(
        options: BridgeOptions,
        herald: Herald,
        hostID: String,
        password: [UInt8]?,
        logger: Logger
    ) throws(BridgeOptions.UsageError) {
        guard let mapping = TopicMapping(prefix: options.prefix) else {
            throw BridgeOptions.UsageError(description: "--prefix '\(options.prefix)' is not a plain MQTT topic")
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
        (events, continuation) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .unbounded)
        for pattern in options.exports + options.imports {
            do {
                _ = try mapping.filter(forPattern: pattern)
            } catch {
                throw BridgeOptions.UsageError(description: "the pattern '\(pattern)' has no MQTT filter: \(error)")
            }
        }
    }

    /// The name of the retained state this bridge posts: `bridge.mqtt.HOSTID` (clients may not post under
    /// `herald.`).
    public static func stateName(hostID: String) -> String { "bridge.mqtt.\(hostID)" }

    /// Runs until the Herald connection is closed for good.
    public func run() async {
        let continuation = self.continuation
        for pattern in options.exports {
            let herald = self.herald
            Task {
                do {
                    let notifications = try await herald.notifications(matching: pattern)
                    continuation.yield(.exporting(pattern))
                    for try await notification in notifications { continuation.yield(.local(notification)) }
                } catch {
                    continuation.yield(.link(generation: -1, .closed("the subscription to \(pattern) ended: \(error)")))
                }
            }
        }
        Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(1))
                continuation.yield(.tick)
            }
        }
        await postState()
        connect()
        for await event in events {
            await handle(event)
        }
    }

    private func handle(_ event: Event) async {
        switch event {
        case .local(let notification):
            await export(notification)
        case .exporting(let pattern):
            logger.notice("exporting \(pattern)")
        case .link(let eventGeneration, let linkEvent):
            if eventGeneration == -1, case .closed(let reason) = linkEvent {
                logger.error(reason)
                return
            }
            guard eventGeneration == generation else { return }
            switch linkEvent {
            case .packet(let packet): await received(packet)
            case .closed(let reason): await linkClosed(reason)
            }
        case .reconnect(let eventGeneration):
            if eventGeneration == generation && link == nil { connect() }
        case .tick:
            keepAlive()
        }
    }

    // MARK: The broker connection

    private func connect() {
        generation += 1
        let current = generation
        var willProperties = Properties()
        willProperties.userProperties = [UserProperty(UserPropertyName.originHost, hostID)]
        let connect = Packet.Connect(
            // The pid keeps a second bridge on this host from taking this one's session over.
            clientIdentifier: "herald-\(hostID)-\(ownPID)",
            cleanStart: generation == 1,
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
        let continuation = self.continuation
        do {
            link = try MQTTLink(
                host: options.host,
                port: options.port,
                first: try Packet.connect(connect).encode(),
                maximumPacketSize: Self.maximumPacketSize
            ) { event in
                continuation.yield(.link(generation: current, event))
            }
            lastSent = .now
            pingSent = nil
        } catch {
            logger.error("cannot start a connection to the broker: \(error)")
            scheduleReconnect()
        }
    }

    /// The largest packet accepted from the broker: a Herald payload is at most a few MiB.
    static let maximumPacketSize = 16 << 20

    private var qos: QoS { options.qos == 0 ? .atMostOnce : .atLeastOnce }

    private func send(_ packet: Packet) {
        guard let link else { return }
        do {
            link.send(try packet.encode())
            lastSent = .now
        } catch {
            logger.error("cannot encode \(packet.type): \(error)")
        }
    }

    private func linkClosed(_ reason: String) async {
        let wasConnected = connected
        link = nil
        connected = false
        logger.warning("mqtt://\(options.host):\(options.port): \(reason); retrying in \(backoff)")
        scheduleReconnect()
        if wasConnected { await postState() }
    }

    private func scheduleReconnect() {
        let current = generation
        let delay = backoff
        backoff = min(backoff * 2, .seconds(30))
        let continuation = self.continuation
        Task {
            try? await Task.sleep(for: delay)
            continuation.yield(.reconnect(generation: current))
        }
    }

    private func keepAlive() {
        guard connected, let link else { return }
        guard keepAliveSeconds > 0 else { return }
        let period = Duration.seconds(Int(keepAliveSeconds))
        if let pingSent, ContinuousClock.now - pingSent > period {
            logger.warning("the broker did not answer PINGREQ within \(period)")
            link.close()
            return
        }
        if pingSent == nil && ContinuousClock.now - lastSent >= period / 2 {
            send(.pingreq)
            pingSent = .now
        }
    }

    private func received(_ packet: Packet) async {
        switch packet {
        case .connack(let connack):
            guard !connack.reasonCode.isFailure else {
                logger.error("the broker refused the connection: \(connack.reasonCode)")
                link?.close()
                return
            }
            connected = true
            backoff = .milliseconds(100)
            maxInflight = min(Int(connack.properties.receiveMaximum ?? 65_535), 1000)
            keepAliveSeconds = connack.properties.serverKeepAlive ?? options.keepAlive
            logger.notice("connected to mqtt://\(options.host):\(options.port)")
            subscribe()
            publishPresence()
            for message in queue.resends() { send(.publish(message)) }
            pump()
            await postState()
        case .publish(let publish):
            await importMessage(publish)
            if publish.qos == .atLeastOnce { send(.puback(.init(packetIdentifier: publish.packetIdentifier))) }
        case .puback(let ack):
            if queue.acknowledged(ack.packetIdentifier) { pump() }
        case .suback(let suback):
            if let failure = suback.reasonCodes.first(where: \.isFailure) {
                logger.error("the broker refused a subscription: \(failure)")
            } else {
                logger.notice("subscribed to \(suback.reasonCodes.count) filters")
            }
        case .pingresp:
            pingSent = nil
        case .disconnect(let disconnect):
            logger.warning(
                "the broker disconnected: \(disconnect.reasonCode) \(disconnect.properties.reasonString ?? "")"
            )
        case .pubrec, .pubrel, .pubcomp, .unsuback:
            break
        case .connect, .subscribe, .unsubscribe, .pingreq, .auth:
            logger.error("the broker sent \(packet.type), which a server does not send")
            send(.disconnect(.init(reasonCode: .protocolError)))
            link?.close()
        }
    }

    private func subscribe() {
        var subscriptions = [
            Packet.Subscription(
                topicFilter: mapping.presenceFilter,
                qos: qos,
                noLocal: true,
                retainAsPublished: true,
                retainHandling: .sendIfNewSubscription
            )
        ]
        for pattern in options.imports {
            guard let filter = try? mapping.filter(forPattern: pattern) else { continue }
            subscriptions.append(
                Packet.Subscription(
                    topicFilter: filter,
                    qos: qos,
                    noLocal: true,
                    retainAsPublished: true,
                    retainHandling: .sendIfNewSubscription
                )
            )
        }
        lastSubscribeIdentifier = lastSubscribeIdentifier == .max ? 1 : lastSubscribeIdentifier + 1
        send(.subscribe(.init(packetIdentifier: lastSubscribeIdentifier, subscriptions: subscriptions)))
    }

    private func publishPresence() {
        var properties = Properties()
        properties.userProperties = [UserProperty(UserPropertyName.originHost, hostID)]
        // Not through the queue: presence is a fact about this connection, not a message to deliver later.
        send(
            .publish(
                .init(
                    topic: mapping.presenceTopic(hostID: hostID),
                    payload: Array("true".utf8),
                    qos: .atMostOnce,
                    retain: true,
                    properties: properties
                )
            )
        )
    }

    private func pump() {
        guard connected else { return }
        while let message = queue.next(maxInflight: maxInflight) {
            send(.publish(message))
            exported += 1
        }
    }

    // MARK: Herald → MQTT

    private func export(_ notification: HeraldNotification) async {
        if let notice = notification.notice {
            // A new daemon numbers its posts from 1 again.
            if notice == .reconnected {
                exportedSequences.removeAll()
                // The new daemon has no retained state of ours.
                await postState()
            }
            return
        }
        // Loop-free: what this bridge posted came from MQTT.
        guard notification.sender.pid != ownPID else { return }
        let name = notification.name
        // The daemon's own names stay on their host; presence is published by the bridges alone.
        if name.hasPrefix("herald.") || Self.isPresenceName(name) { return }
        // A post matched by two export patterns arrives twice.
        guard exportedSequences.insert(notification.sequence) else { return }
        let topic: String
        do {
            topic = try mapping.topic(forName: name)
        } catch {
            refused += 1
            logger.info("not exported: \(name): \(error) (\(refused) refused)")
            return
        }
        let payload = notification.payload
        var retain = notification.isRetained
        if !retain {
            // A live NOTIFY does not say whether its post was retained (wire.md, NOTIFY): the retained value does.
            let current = try? await herald.retainedValue(of: name)
            if let current {
                retain = current.sequence == notification.sequence
            } else {
                // No value now: an empty post cleared it, and clears the broker's copy too.
                retain = payload.isEmpty
            }
        }
        var properties = Properties()
        properties.userProperties = [
            UserProperty(UserPropertyName.originHost, hostID),
            UserProperty(UserPropertyName.senderPID, String(notification.sender.pid)),
            UserProperty(UserPropertyName.senderUID, String(notification.sender.uid)),
            UserProperty(UserPropertyName.sequence, String(notification.sequence)),
            UserProperty(UserPropertyName.daemonPID, String(herald.daemonPID)),
        ]
        if !payload.isEmpty, JSONValue.decode(payload) != nil {
            properties.contentType = "application/json"
            properties.payloadFormatIndicator = 1
        }
        if queue.enqueue(.init(topic: topic, payload: payload, qos: qos, retain: retain, properties: properties)),
            queue.dropped == 1 || queue.dropped % 1000 == 0
        {
            // One line for the first drop and one a thousand, not one per message of a flood.
            logger.warning("the export queue is full: dropping the oldest messages (\(queue.dropped) dropped)")
        }
        if options.verbose { logger.info("export \(name) → \(topic)\(retain ? " (retained)" : "")") }
        pump()
    }

    static func isPresenceName(_ name: String) -> Bool {
        let segments = name.split(separator: ".", omittingEmptySubsequences: false)
        return segments.count == 3 && segments[0] == "hosts" && segments[2] == "online"
    }

    // MARK: MQTT → Herald

    private func importMessage(_ publish: Packet.Publish) async {
        let properties = publish.properties
        let origin = properties.userProperty(UserPropertyName.originHost)
        // Loop-free: this host's own messages, come back through a broker-side loop or a second bridge.
        if origin == hostID {
            loopsDropped += 1
            return
        }
        let name: String
        do {
            name = try mapping.name(forTopic: publish.topic)
        } catch {
            refused += 1
            logger.info("not imported: \(publish.topic): \(error) (\(refused) refused)")
            return
        }
        let isPresence = Self.isPresenceName(name)
        // MQTT's '#' also matches the level above it, which Herald's '**' does not.
        guard isPresence || importPatterns.contains(where: { Self.matches(name, $0) }) else { return }
        if !name.hasPrefix("herald."), let origin,
            let sequence = properties.userProperty(UserPropertyName.sequence)
        {
            let daemon = properties.userProperty(UserPropertyName.daemonPID) ?? ""
            guard importedKeys.insert("\(origin)/\(daemon)/\(sequence)") else { return }
        }
        guard !name.hasPrefix("herald.") else {
            refused += 1
            return
        }
        var payload = publish.payload
        if let origin, !isPresence, case .object(var object)? = JSONValue.decode(payload) {
            var record: [String: JSONValue] = ["host": .string(origin)]
            if let pid = properties.userProperty(UserPropertyName.senderPID).flatMap(Double.init) {
                record["pid"] = .number(pid)
            }
            if let uid = properties.userProperty(UserPropertyName.senderUID).flatMap(Double.init) {
                record["uid"] = .number(uid)
            }
            if let sequence = properties.userProperty(UserPropertyName.sequence).flatMap(Double.init) {
                record["sequence"] = .number(sequence)
            }
            object[Self.originMember] = .object(record)
            payload = JSONValue.encodeObject(object)
        }
        do {
            try await herald.post(name, payload: payload, retain: publish.retain)
            imported += 1
            if options.verbose { logger.info("import \(publish.topic) → \(name)") }
        } catch {
            logger.warning("cannot post \(name): \(error)")
        }
    }

    /// Whether `name` matches a Herald pattern's segments: `*` one segment, a final `**` one or more.
    static func matches(_ name: String, _ pattern: [Substring]) -> Bool {
        let segments = name.split(separator: ".", omittingEmptySubsequences: false)
        if pattern.last == "**" {
            guard segments.count >= pattern.count else { return false }
        } else {
            guard segments.count == pattern.count else { return false }
        }
        for (index, part) in pattern.enumerated() {
            if part == "**" { return true }
            if part != "*" && part != segments[index] { return false }
        }
        return true
    }

    // MARK: State

    private func postState() async {
        let state: [String: JSONValue] = [
            "connected": .bool(connected),
            "queued": .number(Double(queue.waitingCount + queue.inflightCount)),
            "dropped": .number(Double(queue.dropped)),
            "refused": .number(Double(refused)),
            "exported": .number(Double(exported)),
            "imported": .number(Double(imported)),
            "broker": .string("mqtt://\(options.host):\(options.port)"),
        ]
        do {
            try await herald.post(stateName, userInfo: state, retain: true)
        } catch {
            logger.warning("cannot post \(stateName): \(error)")
        }
    }
}
