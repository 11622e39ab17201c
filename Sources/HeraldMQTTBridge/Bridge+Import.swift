import Herald
import HeraldMQTT

/// MQTT → Herald: which messages from the broker are posted here, and how.
extension Bridge {
    func importMessage(_ publish: Packet.Publish) async {
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
}
