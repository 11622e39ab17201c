import HeraldCore
import HeraldMQTT

/// MQTT → Herald: which messages from the broker are posted here, and how.
///
/// Every message is counted in ``ImportCounts``: posted, or not imported for one reason. None can end the bridge's
/// connection to heraldd: the library checks names and sizes first, and heraldd answers a refusal (a bound, a rule)
/// and goes on (Protocols/wire.md, version 2). Payloads are posted byte for byte; where a message came from travels
/// as the post's origin.
extension Bridge {
    func importMessage(_ publish: Packet.Publish) async {
        imports.received += 1
        let properties = publish.properties
        let origin = properties.userProperty(UserPropertyName.originHost)
        // Loop-free: this host's own messages, come back through a broker-side loop or a second bridge.
        if origin == hostID {
            imports.loops += 1
            return
        }
        let name: String
        do {
            name = try mapping.name(forTopic: publish.topic)
        } catch {
            imports.invalidName += 1
            refused += 1
            logLimited("invalid-name", "not imported: \(publish.topic): \(error)")
            return
        }
        // Split once for the presence check and every import pattern: a split per pattern cost an array each.
        let segments = name.split(separator: ".", omittingEmptySubsequences: false)
        let isPresence = Self.isPresence(segments)
        // MQTT's '#' also matches the level above it, which Herald's '**' does not.
        guard isPresence || importPatterns.contains(where: { Self.matches(segments, $0) }) else {
            imports.unmatched += 1
            return
        }
        let sequence = properties.userProperty(UserPropertyName.sequence)
        let daemon = properties.userProperty(UserPropertyName.daemonPID) ?? ""
        if !name.hasPrefix("herald."), let origin, let sequence {
            guard importedKeys.insert(ImportKey(origin: origin, daemon: daemon, sequence: sequence)) else {
                imports.duplicates += 1
                return
            }
        }
        guard !name.hasPrefix("herald.") else {
            imports.reservedName += 1
            refused += 1
            logLimited("reserved-name", "not imported: \(publish.topic): names under herald. are the daemon's")
            return
        }
        guard publish.payload.count <= herald.maxPayload else {
            imports.payloadTooLarge += 1
            logLimited(
                "payload-too-large",
                "not imported: \(publish.topic): \(publish.payload.count) bytes, over heraldd's maxPayload of "
                    + "\(herald.maxPayload)"
            )
            return
        }
        // Other hosts may not take this host's retained store: past the bound, the value is delivered, not kept.
        var retain = publish.retain
        if retain && !retainedImports.admit(name: name, payloadCount: publish.payload.count) {
            retain = false
            imports.retainedAsLive += 1
            logLimited(
                "retained-as-live",
                "imported \(name) as a live post: this bridge already holds \(retainedImports.count) retained values "
                    + "(\(retainedImports.bytes) bytes), its bound (--max-imported-retained, "
                    + "--max-imported-retained-bytes)"
            )
        }
        let from = origin.map {
            HeraldNotification.Origin(host: $0, daemon: daemon, sequence: sequence.flatMap { UInt64($0) } ?? 0)
        }
        do {
            try await herald.post(name, payload: publish.payload, retain: retain, origin: from)
            imports.posted += 1
            imported += 1
            if options.verbose { logger.info("import \(publish.topic) → \(name)") }
        } catch  where error.code == .invalidName {
            // A topic the mapping takes but a name cannot be (longer than 255 bytes): the library's check says so.
            imports.invalidName += 1
            refused += 1
            logLimited("invalid-name", "not imported: \(publish.topic): \(error)")
        } catch {
            imports.failed += 1
            logLimited("post-failed", "cannot post \(name): \(error)")
        }
    }

    /// Logs `message` as a warning unless a line of the same `kind` was logged within the second; a line says how many
    /// events it stands for.
    func logLimited(_ kind: String, _ message: @autoclosure () -> String) {
        guard let count = logLimiter.event(kind) else { return }
        logger.warning(count == 1 ? message() : "\(message()) (and \(count - 1) more like it in the last second)")
    }

    /// Whether a name's `segments` match a Herald pattern's segments: `*` one segment, a final `**` one or more.
    static func matches(_ segments: [Substring], _ pattern: [Substring]) -> Bool {
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
