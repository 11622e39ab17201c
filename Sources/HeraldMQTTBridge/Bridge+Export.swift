import Herald
import HeraldMQTT

/// Herald → MQTT: which local posts are exported, and how.
extension Bridge {
    func export(_ notification: HeraldNotification) async {
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
}
