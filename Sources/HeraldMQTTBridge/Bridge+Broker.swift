import HeraldCore
import HeraldMQTT

/// What comes from the broker, and what the bridge publishes to it: subscriptions, presence, the export queue's
/// messages within the broker's bounds.
extension Bridge {
    func received(_ packet: Packet) async {
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
            brokerMaximumPacketSize = connack.properties.maximumPacketSize.map(Int.init)
            logger.notice("connected to mqtt://\(options.host):\(options.port)")
            subscribe()
            publishPresence()
            for message in queue.resends() { _ = publish(message) }
            pump()
            await postState()
        case .publish(let publish):
            await importMessage(publish)
            if publish.qos == .atLeastOnce { pendingAcknowledgements.append(publish.packetIdentifier) }
        case .puback(let ack):
            if queue.acknowledged(ack.packetIdentifier) { pump() }
        case .suback(let suback):
            if let failure = suback.reasonCodes.first(where: \.isFailure) {
                logger.error("the broker refused a subscription: \(failure)")
            } else {
                logger.notice("subscribed to \(suback.reasonCodes.count) filters")
            }
        case .disconnect(let disconnect):
            logger.warning(
                "the broker disconnected: \(disconnect.reasonCode) \(disconnect.properties.reasonString ?? "")"
            )
        case .pubrec, .pubrel, .pubcomp, .unsuback, .pingresp:
            // PINGRESP: the keep-alive is BridgeIO's.
            break
        case .connect, .subscribe, .unsubscribe, .pingreq, .auth:
            logger.error("the broker sent \(packet.type), which a server does not send")
            send(.disconnect(.init(reasonCode: .protocolError)))
            flush()
            link?.close()
        }
    }

    /// Acknowledges the QoS 1 messages imported from one read, once their posts are written to heraldd's socket.
    ///
    /// A PUBACK tells the broker the message is safe with us, and a post still waiting in this process's outgoing
    /// buffer (`Herald.post` returns once it is queued) is not: were the bridge killed then, it would be lost. Once
    /// written, heraldd reads it even if the bridge dies, so the bridge waits for `Herald.waitUntilWritten`, not for
    /// `Herald.flush`, whose round trip in every QoS 1 window cost a third of the bridged throughput (21k against
    /// 29k msg/s, Benchmarks/README.md). If heraldd's connection ended, or the broker connection changed meanwhile,
    /// nothing is acknowledged: the broker sends those messages again (DUP), and `importedKeys` posts them once.
    func acknowledgeImports() async {
        guard !pendingAcknowledgements.isEmpty else { return }
        let identifiers = pendingAcknowledgements
        pendingAcknowledgements.removeAll(keepingCapacity: true)
        let current = generation
        do {
            try await herald.waitUntilWritten()
        } catch {
            logger.warning("\(identifiers.count) imported messages not acknowledged, not written to heraldd: \(error)")
            return
        }
        guard current == generation else { return }
        for identifier in identifiers { send(.puback(.init(packetIdentifier: identifier))) }
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

    func pump() {
        guard connected else { return }
        while let message = queue.next(maxInflight: maxInflight) {
            if publish(message) { exported += 1 }
        }
    }

    /// Encodes `message` for the next flush, unless it is larger than the broker's Maximum Packet Size: the broker
    /// would have to disconnect us for it (§3.1.2.11.4), so it is refused here, counted, and forgotten.
    ///
    /// - Returns: whether it was sent.
    private func publish(_ message: Packet.Publish) -> Bool {
        // Encoded straight into the output, and taken back out if it may not go.
        let start = output.count
        do {
            // Validated as it was queued (`enqueue`).
            try Packet.publish(message).encode(into: &output, validating: false)
        } catch {
            logger.error("cannot encode PUBLISH to \(message.topic): \(error)")
            if message.qos != .atMostOnce { queue.acknowledged(message.packetIdentifier) }
            return false
        }
        let size = output.count - start
        if let limit = brokerMaximumPacketSize, size > limit {
            output.removeSubrange(start...)
            tooLarge += 1
            if message.qos != .atMostOnce { queue.acknowledged(message.packetIdentifier) }
            logLimited(
                "too-large",
                "not exported: \(message.topic): \(size) bytes, past the broker's Maximum Packet Size of "
                    + "\(limit) (\(tooLarge) too large)"
            )
            return false
        }
        if link == nil { output.removeSubrange(start...) }
        return true
    }
}
