import HeraldCore
import HeraldMQTT

/// Herald → MQTT: which local posts are exported, and how.
extension Bridge {
    /// Exports a batch of notifications, in their order.
    ///
    /// Whether a live post was retained: a version 2 daemon says so in the notification
    /// (``HeraldNotification/updatesRetainedValue``); a version 1 daemon is asked (`GET`) once per name per batch.
    func export(_ batch: [HeraldNotification]) async {
        var chosen: [(notification: HeraldNotification, name: String, topic: String)] = []
        chosen.reserveCapacity(batch.count)
        for notification in batch {
            if let notice = notification.notice {
                // Reconnected to heraldd: post the state again. heraldd's state survives its restart (issue 31), but
                // what it holds of ours is the last post before the loss, or the will's "connected": false; neither
                // is the counts now. A new daemon numbers its posts from 1 again, which `importedKeys` allows for
                // (the daemon's pid is part of a key).
                if notice == .reconnected {
                    await postState()
                }
                continue
            }
            // Loop-free: what this bridge posted came from MQTT.
            guard notification.sender.pid != ownPID else { continue }
            let name = notification.name
            // The daemon's own names stay on their host; presence is published by the bridges alone.
            if name.hasPrefix("herald.") || Self.isPresenceName(name) { continue }
            do {
                chosen.append((notification, name, try mapping.topic(forName: name)))
            } catch {
                refused += 1
                logLimited("not-exported", "not exported: \(name): \(error) (\(refused) refused)")
            }
        }
        guard !chosen.isEmpty else { return }
        let marksRetain = herald.protocolVersion >= 2
        let current =
            marksRetain
            ? [:] : await retainedValues(of: Set(chosen.lazy.filter { !$0.notification.isRetained }.map(\.name)))
        for (notification, name, topic) in chosen {
            let payload = notification.payload
            var retain = notification.isRetained || notification.updatesRetainedValue
            if !retain && !marksRetain {
                // A live NOTIFY does not say whether its post was retained (wire.md, NOTIFY): the retained value
                // does. A post replaced since by a later retained one of the batch goes without RETAIN, which
                // leaves the broker with the same last value.
                if let value = current[name] ?? nil {
                    retain = value.sequence == notification.sequence
                } else {
                    // No value now: an empty post cleared it, and clears the broker's copy too.
                    retain = payload.isEmpty
                }
            }
            enqueue(notification, payload: payload, topic: topic, retain: retain)
            if options.verbose { logger.info("export \(name) → \(topic)\(retain ? " (retained)" : "")") }
        }
        pump()
    }

    /// The retained values of `names` now, asked all at once: the `GET`s are pipelined on the connection.
    private func retainedValues(of names: Set<String>) async -> [String: HeraldNotification?] {
        let herald = self.herald
        if names.count == 1, let name = names.first {
            // The usual case, with no child task to start.
            return [name: try? await herald.retainedValue(of: name)]
        }
        return await withTaskGroup(of: (String, HeraldNotification?).self) { group in
            for name in names {
                group.addTask { (name, try? await herald.retainedValue(of: name)) }
            }
            var values: [String: HeraldNotification?] = [:]
            for await (name, value) in group { values[name] = value }
            return values
        }
    }

    private func enqueue(_ notification: HeraldNotification, payload: [UInt8], topic: String, retain: Bool) {
        var properties = Properties()
        properties.userProperties = [
            UserProperty(UserPropertyName.originHost, hostID),
            UserProperty(UserPropertyName.senderPID, String(notification.sender.pid)),
            UserProperty(UserPropertyName.senderUID, String(notification.sender.uid)),
            UserProperty(UserPropertyName.sequence, String(notification.sequence)),
            UserProperty(UserPropertyName.daemonPID, String(herald.daemonPID)),
        ]
        if !payload.isEmpty, JSONText.isValid(payload) {
            properties.contentType = "application/json"
            properties.payloadFormatIndicator = 1
        }
        var message = Packet.Publish(topic: topic, payload: payload, qos: qos, retain: retain, properties: properties)
        // Validated once, here, with a stand-in for the Packet Identifier the queue gives it when it is sent: `publish`
        // then encodes it as it is, also when it is sent again after a reconnect.
        message.packetIdentifier = qos == .atMostOnce ? 0 : 1
        do {
            try Packet.publish(message).validate()
        } catch {
            logger.error("cannot encode PUBLISH to \(topic): \(error)")
            return
        }
        message.packetIdentifier = 0
        if queue.enqueue(message),
            queue.dropped == 1 || queue.dropped % 1000 == 0
        {
            // One line for the first drop and one a thousand, not one per message of a flood.
            logger.warning("the export queue is full: dropping the oldest messages (\(queue.dropped) dropped)")
        }
    }

    static func isPresenceName(_ name: String) -> Bool {
        isPresence(name.split(separator: ".", omittingEmptySubsequences: false))
    }

    /// Whether a name's `segments` are `hosts.HOSTID.online`.
    static func isPresence(_ segments: [Substring]) -> Bool {
        segments.count == 3 && segments[0] == "hosts" && segments[2] == "online"
    }
}
