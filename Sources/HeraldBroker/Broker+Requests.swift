import HeraldWire

/// The requests other than posts: subscriptions, wills, monitors and `NAMES`. Each checks what it may be refused
/// for (Broker+Refusals) before it changes anything, so a refusal leaves the connection as it was.
extension Broker {
    mutating func handleSubscribe(_ subscribe: Frame.Subscribe, on id: ConnectionID) -> Action {
        if let error = subscriptionRefusal(subscribe.subscription, subscribe.pattern, on: id) {
            return refuse(id, error)
        }
        addSubscription(
            subscribe.subscription,
            subscribe.pattern,
            subscribe.overflow,
            noLocal: subscribe.noLocal,
            on: id
        )
        // Retained values first, oldest post first, then the ACK: wire.md's "no gap". A wildcard's may be many: they
        // are fed as the subscriber drains (Broker+Replay).
        guard subscribe.pattern.isExact else {
            startReplay(subscribe.subscription, subscribe.pattern, on: id)
            return .none
        }
        if let notify = retained[subscribe.pattern.text]?.notify {
            enqueueRetained(notify, for: subscribe.subscription, to: id)
        }
        enqueueControl(.ack(Frame.Ack(request: subscribe.subscription, sequence: lastSequence)), to: id)
        return .none
    }

    mutating func addSubscription(
        _ subscription: UInt32,
        _ pattern: Pattern,
        _ overflow: OverflowPolicy,
        noLocal: Bool = false,
        isMonitor: Bool = false,
        on id: ConnectionID
    ) {
        connections[id.rawValue]!.subscriptions[subscription] = Subscription(
            pattern: pattern,
            overflow: overflow,
            noLocal: noLocal,
            isMonitor: isMonitor
        )
        if isMonitor { monitorCount += 1 }
        if noLocal { mailboxes[id.rawValue].noLocalCount += 1 }
        connections[id.rawValue]!.patternCost += pattern.cost
        index.insert(pattern, for: id)
        subscriptionCount += 1
        updatePolicy(of: id)
    }

    mutating func handleUnsubscribe(_ unsubscribe: Frame.Unsubscribe, on id: ConnectionID) -> Action {
        guard
            let subscription = connections[id.rawValue]!.subscriptions.removeValue(forKey: unsubscribe.subscription)
        else {
            return refuse(
                id,
                WireError(
                    .unknownSubscription,
                    "subscription \(unsubscribe.subscription) is not live on this connection",
                    request: unsubscribe.subscription
                )
            )
        }
        index.remove(subscription.pattern, for: id)
        connections[id.rawValue]!.patternCost -= subscription.pattern.cost
        if subscription.noLocal { mailboxes[id.rawValue].noLocalCount -= 1 }
        subscriptionCount -= 1
        if subscription.isMonitor { monitorCount -= 1 }
        updatePolicy(of: id)
        return .none
    }

    mutating func handleWill(_ will: Frame.Will, on id: ConnectionID) -> Action {
        let current = connections[id.rawValue]!.will
        if will.name.isEmpty {
            if let current {
                charge(current, -1)
                willEnded(connections[id.rawValue]!.willID)
            }
            connections[id.rawValue]!.will = nil
        } else {
            if let error = refusal(
                name: will.name,
                payloadCount: will.payload.count,
                retain: false,  // checked again when it is posted; the set may change meanwhile
                request: will.request,
                on: id
            ) {
                return refuse(id, error)
            }
            if let error = willRefusal(will, replacing: current) {
                return refuse(id, error)
            }
            if let current {
                charge(current, -1)
                willEnded(connections[id.rawValue]!.willID)
            }
            charge(will, 1)
            connections[id.rawValue]!.will = will
            willRegistered(will, on: id)
        }
        enqueueControl(.ack(Frame.Ack(request: will.request, sequence: lastSequence)), to: id)
        return .none
    }

    mutating func handleMonitor(_ monitor: Frame.Monitor, on id: ConnectionID) -> Action {
        let sender = mailboxes[id.rawValue].sender
        guard sender.uid == configuration.ownerUID else {
            return refuse(
                id,
                WireError(
                    .permissionDenied,
                    "only uid \(configuration.ownerUID), the session's owner, may monitor; this is uid \(sender.uid)",
                    request: monitor.request
                )
            )
        }
        // The rest is SUBSCRIBE `**`'s (wire.md, MONITOR): the same errors, in the same order.
        if let error = subscriptionRefusal(monitor.request, Self.everything, on: id) {
            return refuse(id, error)
        }
        mailboxes[id.rawValue].isMonitor = true
        if let will = connections[id.rawValue]!.will.take() {
            charge(will, -1)
            willEnded(connections[id.rawValue]!.willID)
        }
        addSubscription(monitor.request, Self.everything, .dropOldest, isMonitor: true, on: id)
        enqueueControl(.ack(Frame.Ack(request: monitor.request, sequence: lastSequence)), to: id)
        return .none
    }

    static let everything = try! Pattern("**")

    /// The most name bytes one `NAMES_REPORT` carries: under the frame limit a client derives from `maxPayload`,
    /// and at most ~60 KB.
    var namesChunkBytes: Int {
        min(60_000, Limits.maxFrameLength(maxPayload: configuration.bounds.maxPayload) - 64)
    }

    /// Answers `NAMES`: retained names and exact subscriptions, sorted, in frames a client can decode; with
    /// `COUNTS`, each with the number of subscriptions matching it, `MONITOR`s left out.
    mutating func answerNames(_ names: Frame.Names, to id: ConnectionID) -> Action {
        let request = names.request
        // Bounded before any work: the answer is sorted and queued whole, so its cost (CPU for everyone, memory
        // in the asker's queue, where control frames are never dropped) must not grow with what other clients
        // registered. The two sets are counted apart, so a name in both counts twice: O(1), no union to build.
        let count = retained.count + index.exactNameCount
        guard count <= configuration.bounds.maxNames else {
            return refuse(
                id,
                WireError(
                    .tooManyNames,
                    "\(retained.count) retained names and \(index.exactNameCount) exactly subscribed names are over "
                        + "this daemon's limit of \(configuration.bounds.maxNames) names for NAMES",
                    request: request
                )
            )
        }
        // Bytewise, as wire.md says: String's own order compares normalized scalars, which differs for names
        // that are not in NFC, and a client in another language could not reproduce it.
        let sorted = Set(retained.keys).union(index.exactNames).sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        let countBytes = names.counts ? 4 : 0
        var chunk: [String] = []
        var counts: [UInt32]? = names.counts ? [] : nil
        var size = 0
        for name in sorted {
            // A frame must fit the client's decoder, which WELCOME's maxPayload sizes; found by the fuzzer.
            let entry = 1 + name.utf8.count + countBytes
            if size + entry > namesChunkBytes {
                let report = Frame.NamesReport(request: request, names: chunk, more: true, counts: counts)
                enqueueControl(.namesReport(report), to: id)
                chunk = []
                if counts != nil { counts = [] }
                size = 0
            }
            chunk.append(name)
            if counts != nil { counts!.append(subscriberCount(of: name)) }
            size += entry
        }
        let report = Frame.NamesReport(request: request, names: chunk, more: false, counts: counts)
        enqueueControl(.namesReport(report), to: id)
        return .none
    }

    /// The live subscriptions whose pattern matches `name`, on every connection, less the `MONITOR`s: each of them
    /// is a `**` in the index, which matches every name once.
    func subscriberCount(of name: String) -> UInt32 {
        var name = name
        let matching = name.withUTF8 { index.subscriptionCount(ofName: UnsafeRawBufferPointer($0)) }
        return UInt32(matching - monitorCount)
    }
}
