import HeraldCore
import HeraldDBus
import HeraldDesktop

extension DBusBridge {
    /// The retained name of the bridge's own state.
    public static let stateName = "bridge.dbus"

    /// Queues a source's posts for the end of the batch, and logs its refusals.
    func post(_ update: SourceUpdate) async {
        pendingPosts += update.posts
        if !update.refusals.isEmpty { await refuse(update.refusals) }
    }

    /// Makes the batch's posts, in order; of a retained name's values only the last, in the place of the last: a
    /// flood of changes costs one post per name and batch, and the retained value ends where the source did.
    func flushPosts() async {
        guard !pendingPosts.isEmpty else { return }
        var last: [String: Int] = [:]
        for (index, item) in pendingPosts.enumerated() where item.retain { last[item.name] = index }
        let batch = pendingPosts
        pendingPosts = []
        for (index, item) in batch.enumerated() where !item.retain || last[item.name] == index {
            do {
                if let payload = item.payload {
                    try await herald.post(item.name, userInfo: payload.mapValues(\.heraldJSON), retain: item.retain)
                } else {
                    try await herald.post(item.name, payload: [], retain: true)
                }
                posted += 1
                if options.verbose {
                    let text = item.payload.map {
                        String(decoding: JSONValue.encodeObject($0.mapValues(\.heraldJSON)), as: UTF8.self)
                    }
                    logger.info("posted \(item.name)\(item.retain ? " (retained)" : "") \(text ?? "cleared")")
                }
            } catch {
                recordError("cannot post \(item.name): \(error)")
            }
        }
    }

    /// Counts and logs refused input (a property of the wrong type, a malformed notify.desktop), a line a second.
    func refuse(_ reasons: [String]) async {
        for reason in reasons {
            refused += 1
            lastError = "refused: \(reason)"
            // A line a second for each reason: a flood of one bad property is a few lines, and another reason
            // meanwhile still gets its own.
            if let count = logLimiter.event(reason) {
                logger.warning("refused \(count == 1 ? "" : "\(count) inputs, the last: ")\(reason)")
            }
        }
    }

    /// Counts and logs an error, a line a second.
    func recordError(_ text: String) {
        errors += 1
        lastError = text
        if let count = logLimiter.event("error") {
            logger.warning(count == 1 ? text : "\(count) errors, the last: \(text)")
        }
    }

    /// The bridge's state as posted to `bridge.dbus`.
    func state() -> [String: JSONValue] {
        var sources: [String: JSONValue] = [:]
        let login = owners[Self.login1] != nil
        sources["session"] = .bool(login && sessionPath != nil)
        sources["sleep"] = .bool(login)
        sources["idle"] = .bool(login && sessionPath != nil)
        sources["battery"] = .bool(owners[Self.upower] != nil)
        sources["network"] = .bool(owners[Self.networkManager] != nil)
        sources["notifications"] = .bool(owners[Self.notifications] != nil)
        sources["screenSavers"] = .array(
            Self.screenSavers.filter { owners[$0.name] != nil }.map { .string($0.name) }
        )
        sources["players"] = .array(players.busNames.sorted().map { .string($0) })
        var buses: [String: JSONValue] = [:]
        for bus in Bus.allCases {
            buses[bus.rawValue] = .object([
                "connected": .bool(clients[bus]?.isConnected ?? false),
                "reconnections": .number(Double(reconnections[bus] ?? 0)),
            ])
        }
        return [
            "running": .bool(true),
            "sources": .object(sources),
            "buses": .object(buses),
            "refused": .number(Double(refused)),
            "errors": .number(Double(errors)),
            "lastError": lastError.map { .string($0) } ?? .null,
            "unansweredLockRequests": .number(Double(lock.unansweredLockRequests)),
        ]
    }

    /// Posts `bridge.dbus` when it changed: at once when a source or a bus did, at most once a second when only the
    /// counts did (a flood of refusals is not doubled by as many state posts). No timer: the counts of the last
    /// second are posted with the next event.
    func postState(force: Bool) async {
        let current = state()
        guard force || current != lastState else { return }
        let onlyCounts = current["sources"] == lastState["sources"] && current["buses"] == lastState["buses"]
        let now = ContinuousClock.now
        if !force, onlyCounts, now - lastStateTime < .seconds(1) { return }
        lastState = current
        lastStateTime = now
        do {
            try await herald.post(Self.stateName, userInfo: current, retain: true)
        } catch {
            logger.warning("cannot post \(Self.stateName): \(error)")
        }
    }
}
