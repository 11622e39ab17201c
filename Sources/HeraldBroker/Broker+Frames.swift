import HeraldWire

extension Broker {
    /// A whole frame arrived on a connection, decoded and checked by `FrameDecoder(role: .daemon)`.
    ///
    /// - Parameters:
    ///   - now: The daemon's clock, nanoseconds since 1970; it stamps posts.
    mutating func frameReceived(_ frame: Frame, from id: ConnectionID, now: UInt64) -> Action {
        switch mailboxes[id.rawValue].phase {
        case .closed:
            preconditionFailure("frame from connection \(id), which is not open")
        case .closing:
            return .closeAfterFlush
        case .awaitingHello:
            guard case .hello(let hello) = frame else {
                return fail(
                    id,
                    WireError(
                        .helloRequired,
                        "the first frame must be HELLO, not \(frame.type)",
                        request: frame.requestField ?? 0
                    )
                )
            }
            return handshake(hello, on: id)
        case .ready:
            break
        }
        if configuration.bounds.maxNameBytes < Limits.maxNameBytes, let error = overlongName(in: frame) {
            return fail(id, error)
        }
        switch frame {
        case .hello:
            return fail(id, WireError(.unexpectedHello, "HELLO was already received on this connection"))
        case .post(let post):
            return handlePost(post, from: id, now: now)
        case .subscribe(let subscribe):
            guard reportsSubscriptions else { return handleSubscribe(subscribe, on: id) }
            let isNew = connections[id.rawValue]?.subscriptions[subscribe.subscription] == nil
            let action = handleSubscribe(subscribe, on: id)
            if isNew, connections[id.rawValue]?.subscriptions[subscribe.subscription] != nil {
                subscribedPatterns.append(subscribe.pattern)
            }
            return action
        case .unsubscribe(let unsubscribe):
            return handleUnsubscribe(unsubscribe, on: id)
        case .get(let get):
            if let value = retained[get.name] {
                var notify = value.notify
                notify.subscription = get.request
                notify.retained = true
                enqueueControl(.notify(notify), to: id)
            }
            enqueueControl(.ack(Frame.Ack(request: get.request, sequence: lastSequence)), to: id)
            return .none
        case .ping(let ping):
            enqueueControl(.ack(Frame.Ack(request: ping.request, sequence: lastSequence)), to: id)
            return .none
        case .status(let status):
            enqueueControl(.statusReport(statusReport(request: status.request)), to: id)
            return .none
        case .bye:
            connections[id.rawValue]!.saidGoodbye = true
            mailboxes[id.rawValue].phase = .closing
            return .closeAfterFlush
        case .will(let will):
            return handleWill(will, on: id)
        case .monitor(let monitor):
            return handleMonitor(monitor, on: id)
        case .names(let names):
            return answerNames(names.request, to: id)
        case .plugin(let plugin):
            pluginRequests.append(PluginRequest(connection: id, frame: plugin))
            return .none
        case .welcome, .notify, .ack, .dropped, .error, .statusReport, .namesReport:
            // The decoder never yields these for the daemon; refuse rather than trap, since this is
            // client input.
            return fail(id, WireError(.unknownFrameType, "\(frame.type) is a daemon frame"))
        }
    }

    private mutating func handshake(_ hello: Frame.Hello, on id: ConnectionID) -> Action {
        let supported = ProtocolVersion.supported
        let low = max(hello.minVersion, supported.lowerBound)
        let high = min(hello.maxVersion, supported.upperBound)
        guard low <= high else {
            return fail(
                id,
                WireError(
                    .unsupportedVersion,
                    "the client speaks versions \(hello.minVersion)...\(hello.maxVersion); "
                        + "this daemon speaks \(supported.lowerBound)...\(supported.upperBound)"
                )
            )
        }
        mailboxes[id.rawValue].phase = .ready
        connections[id.rawValue]!.client = hello.client
        let welcome = Frame.Welcome(
            version: high,
            maxSubscriptions: UInt16(clamping: configuration.bounds.maxSubscriptions),
            maxPayload: UInt32(clamping: configuration.bounds.maxPayload),
            daemonPID: UInt32(bitPattern: configuration.daemonPID),
            server: configuration.server
        )
        enqueueControl(.welcome(welcome), to: id)
        return .none
    }

    /// The error for a name or pattern longer than `--max-name-bytes`, which may be set below the protocol's 255.
    private func overlongName(in frame: Frame) -> WireError? {
        let limit = configuration.bounds.maxNameBytes
        func check(_ text: String, _ code: WireError.Code, _ what: String, _ request: UInt32) -> WireError? {
            let count = text.utf8.count
            guard count > limit else { return nil }
            return WireError(
                code,
                "\(what) of \(count) bytes is over this daemon's limit of \(limit)",
                request: request
            )
        }
        switch frame {
        case .post(let post): return check(post.name, .invalidName, "name", post.request)
        case .get(let get): return check(get.name, .invalidName, "name", get.request)
        case .will(let will): return check(will.name, .invalidName, "name", will.request)
        case .subscribe(let subscribe):
            return check(subscribe.pattern.text, .invalidPattern, "pattern", subscribe.subscription)
        default: return nil
        }
    }

    /// Checks what `POST` and `WILL` share: not a monitor, not a reserved name, room for a retained value.
    private func refusal(
        name: String,
        payloadCount: Int,
        retain: Bool,
        request: UInt32,
        on id: ConnectionID
    ) -> WireError? {
        if mailboxes[id.rawValue].isMonitor {
            return WireError(.permissionDenied, "a monitor connection is read-only", request: request)
        }
        if Name.isReserved(name) {
            return WireError(
                .reservedName,
                "\"\(name)\" is reserved: names under \(Name.reservedPrefix). are the library's notices",
                request: request
            )
        }
        if retain && payloadCount > 0 && retained[name] == nil && retained.count >= configuration.bounds.maxRetained {
            return WireError(
                .tooManyRetained,
                "\(retained.count) names already have a retained value, the limit is \(configuration.bounds.maxRetained)",
                request: request
            )
        }
        if retain && payloadCount > 0 && !canRetain(name: name, payloadCount: payloadCount) {
            return WireError(
                .tooManyRetainedBytes,
                "retained values already hold \(retainedBytes) bytes; \(name.utf8.count + payloadCount) more "
                    + "would pass the limit of \(configuration.bounds.maxRetainedBytes)",
                request: request
            )
        }
        return nil
    }

    private mutating func handlePost(_ post: Frame.Post, from id: ConnectionID, now: UInt64) -> Action {
        if let error = refusal(
            name: post.name,
            payloadCount: post.payload.count,
            retain: post.retain,
            request: post.request,
            on: id
        ) {
            return fail(id, error)
        }
        let sequence = self.post(
            name: post.name,
            payload: post.payload,
            retain: post.retain,
            sender: mailboxes[id.rawValue].sender,
            now: now
        )
        // The post may have overflowed the poster's own queue under DISCONNECT: then its final ERROR is queued
        // and nothing may follow it (wire.md: every ERROR is final). Found by the fuzzer.
        if isClosing(id) { return .closeAfterFlush }
        if post.request != 0 {
            enqueueControl(.ack(Frame.Ack(request: post.request, sequence: sequence)), to: id)
        }
        return .none
    }

    /// A frame as `FrameDecoder.withNextFrame` or `FrameDecoder.withFrame` hands it over: a `POST` read in place,
    /// or any frame decoded.
    mutating func received(_ next: FrameDecoder.Next, from id: ConnectionID, now: UInt64) -> Action {
        switch next {
        case .post(let post): postReceived(post, from: id, now: now)
        case .frame(let frame): frameReceived(frame, from: id, now: now)
        }
    }

    /// Takes the next whole frame out of `decoder` (the connection's buffered input) and handles it.
    ///
    /// - Returns: What to do with the connection; nil when `decoder` holds no whole frame.
    /// - Throws: `WireError` for a protocol violation, as the decoder found it; the broker is unchanged.
    mutating func receiveNext(
        from decoder: inout FrameDecoder,
        on id: ConnectionID,
        now: UInt64
    ) throws(WireError) -> Action? {
        try decoder.withNextFrame { received($0, from: id, now: now) }
    }

    /// A `POST` read in place by the decoder (`FrameDecoder.withNextFrame`): the daemon's common case.
    ///
    /// A live post to a plain name goes straight from the decoder's bytes to ``route(name:payload:sender:now:)``;
    /// anything that needs more (a retained value, a monitor's refusal, a reserved name, a lowered name limit, a
    /// connection not yet ready) is checked by `frameReceived` as a `Frame` first, and then takes the same route.
    mutating func postReceived(_ post: PostView, from id: ConnectionID, now: UInt64) -> Action {
        guard mailboxes[id.rawValue].phase == .ready, !post.retain, !mailboxes[id.rawValue].isMonitor,
            configuration.bounds.maxNameBytes >= post.name.count, !post.isReservedName
        else {
            return frameReceived(.post(post.post), from: id, now: now)
        }
        let sequence = route(name: post.name, payload: post.payload, sender: mailboxes[id.rawValue].sender, now: now)
        // As in handlePost: the poster's own queue may have overflowed under DISCONNECT.
        if isClosing(id) { return .closeAfterFlush }
        if post.request != 0 {
            enqueueControl(.ack(Frame.Ack(request: post.request, sequence: sequence)), to: id)
        }
        return .none
    }

    /// Stores or clears the retained value when `retain` is set, then posts on the one route every post takes
    /// (``route(name:payload:sender:now:)``).
    ///
    /// - Returns: The post's sequence number.
    @discardableResult
    mutating func post(name: String, payload: [UInt8], retain: Bool, sender: Sender, now: UInt64) -> UInt64 {
        if retain {
            // Stored before it is routed, as a subscriber being replayed to reads the retained values meanwhile.
            store(
                Frame.Notify(
                    sequence: lastSequence + 1,
                    time: now,
                    pid: sender.pid,
                    uid: sender.uid,
                    gid: sender.gid,
                    name: name,
                    payload: payload
                )
            )
        }
        var name = name
        return name.withUTF8 { nameBytes in
            payload.withUnsafeBytes { payloadBytes in
                route(name: UnsafeRawBufferPointer(nameBytes), payload: payloadBytes, sender: sender, now: now)
            }
        }
    }

    /// The one route of every post, whoever made it (a client's `POST` read in place or decoded, a will, the
    /// daemon's own): assigns the next sequence number, finds the subscribers by the name's bytes, encodes the live
    /// `NOTIFY` once into the arena and queues it to each of them.
    ///
    /// - Returns: The post's sequence number.
    mutating func route(
        name: UnsafeRawBufferPointer,
        payload: UnsafeRawBufferPointer,
        sender: Sender,
        now: UInt64
    ) -> UInt64 {
        lastSequence += 1
        posted += 1
        let sequence = lastSequence
        let found = index.matches(ofName: name)
        if !found.isEmpty {
            let size = Frame.Notify.encodedSize(nameCount: name.count, payloadCount: payload.count)
            if arenaUsed + size > arena.capacity { endTurn() }
            let offset = arenaUsed
            Frame.Notify.encodeLive(
                sequence: sequence,
                time: now,
                pid: sender.pid,
                uid: sender.uid,
                gid: sender.gid,
                name: name,
                payload: payload,
                to: arena.base + offset
            )
            arenaUsed += size
            deliver(arenaOffset: offset, size: size, sequence: sequence, to: found)
        }
        return sequence
    }

    /// What a retained value is charged against `maxRetainedBytes`: its name and payload.
    static func retainedCost(name: String, payloadCount: Int) -> Int {
        name.utf8.count + payloadCount
    }

    /// Whether a retained value of `payloadCount` bytes for `name` fits `maxRetainedBytes`, in place of the
    /// name's current value.
    func canRetain(name: String, payloadCount: Int) -> Bool {
        let freed = retained[name].map { Self.retainedCost(name: name, payloadCount: $0.notify.payload.count) } ?? 0
        return retainedBytes - freed + Self.retainedCost(name: name, payloadCount: payloadCount)
            <= configuration.bounds.maxRetainedBytes
    }

    /// Makes a retained post the name's value, or clears it when the payload is empty, keeping the byte count and
    /// the replay log.
    private mutating func store(_ notify: Frame.Notify) {
        let name = notify.name
        if let old = retained[name] {
            retainedBytes -= Self.retainedCost(name: name, payloadCount: old.notify.payload.count)
        }
        if notify.payload.isEmpty {
            retained[name] = nil
        } else {
            retained[name] = Retained(notify: notify)
            retainedBytes += Self.retainedCost(name: name, payloadCount: notify.payload.count)
            retainedLog.append(sequence: notify.sequence, name: name)
        }
        journalRetained(notify)
        let values = retained
        retainedLog.compact(current: values.count) { values[$0.name]?.notify.sequence == $0.sequence }
    }

    /// Queues the live `NOTIFY` encoded at `offset` in the arena to each of `ids`.
    private mutating func deliver(arenaOffset offset: Int, size: Int, sequence: UInt64, to ids: [ConnectionID]) {
        for id in ids {
            if mailboxes[id.rawValue].isReplaying {
                holdLive(arenaOffset: offset, size: size, sequence: sequence, for: id)
                continue
            }
            guard let delivery = mailboxes[id.rawValue].enqueueLive(arenaOffset: offset, size: size, sequence: sequence)
            else { continue }
            if delivery.becameDirty { dirty.append(id) }
            if delivery.becameArenaHolder { arenaHolders.append(id) }
            if delivery.becameUrgent { urgent.append(id) }
            switch delivery.outcome {
            case .queued(let count):
                dropped += UInt64(count)
            case .overflowed:
                // DISCONNECT: what is queued and not begun goes, the reason goes out, then the socket.
                mailboxes[id.rawValue].queue.removeLiveFrames()
                _ = fail(
                    id,
                    WireError(
                        .slowConsumer,
                        "this connection read too slowly: its queue of \(configuration.bounds.queueBytes) bytes "
                            + "overflowed and its overflow policy is disconnect"
                    )
                )
            }
        }
    }

    private mutating func handleSubscribe(_ subscribe: Frame.Subscribe, on id: ConnectionID) -> Action {
        let subscriptions = connections[id.rawValue]!.subscriptions
        guard subscriptions[subscribe.subscription] == nil else {
            return fail(
                id,
                WireError(
                    .duplicateSubscription,
                    "subscription \(subscribe.subscription) is already live on this connection",
                    request: subscribe.subscription
                )
            )
        }
        guard subscriptions.count < configuration.bounds.maxSubscriptions else {
            return fail(
                id,
                WireError(
                    .tooManySubscriptions,
                    "this connection already holds \(subscriptions.count) subscriptions, the limit",
                    request: subscribe.subscription
                )
            )
        }
        if let error = patternCostRefusal(subscribe.pattern, request: subscribe.subscription, on: id) {
            return fail(id, error)
        }
        addSubscription(subscribe.subscription, subscribe.pattern, subscribe.overflow, on: id)
        // Retained values first, oldest post first, then the ACK: wire.md's "no gap". A wildcard's may be many: they
        // are fed as the subscriber drains (Broker+Replay).
        guard subscribe.pattern.isExact else {
            startReplay(subscribe.subscription, subscribe.pattern, on: id)
            return .none
        }
        if var notify = retained[subscribe.pattern.text]?.notify {
            notify.subscription = subscribe.subscription
            notify.retained = true
            enqueueControl(.notify(notify), to: id)
        }
        enqueueControl(.ack(Frame.Ack(request: subscribe.subscription, sequence: lastSequence)), to: id)
        return .none
    }

    /// The error for a pattern that would take the connection's pattern cost past `maxPatternCost`.
    ///
    /// A wildcard pattern's segments bound its memory and what it adds to the matching of every post (a lookup for
    /// its shape, a step per `*`): the sum is charged to the connection and bounded like its queue.
    private func patternCostRefusal(_ pattern: Pattern, request: UInt32, on id: ConnectionID) -> WireError? {
        let held = connections[id.rawValue]!.patternCost
        guard held + pattern.cost > configuration.bounds.maxPatternCost else { return nil }
        return WireError(
            .patternTooComplex,
            "this pattern costs \(pattern.cost) (its segments) and this connection's patterns already cost \(held), "
                + "the limit is \(configuration.bounds.maxPatternCost)",
            request: request
        )
    }

    private mutating func addSubscription(
        _ subscription: UInt32,
        _ pattern: Pattern,
        _ overflow: OverflowPolicy,
        on id: ConnectionID
    ) {
        connections[id.rawValue]!.subscriptions[subscription] = Subscription(pattern: pattern, overflow: overflow)
        connections[id.rawValue]!.patternCost += pattern.cost
        index.insert(pattern, for: id)
        subscriptionCount += 1
        updatePolicy(of: id)
    }

    private mutating func handleUnsubscribe(_ unsubscribe: Frame.Unsubscribe, on id: ConnectionID) -> Action {
        guard
            let subscription = connections[id.rawValue]!.subscriptions.removeValue(forKey: unsubscribe.subscription)
        else {
            return fail(
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
        subscriptionCount -= 1
        updatePolicy(of: id)
        return .none
    }

    private mutating func handleWill(_ will: Frame.Will, on id: ConnectionID) -> Action {
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
                return fail(id, error)
            }
            if let error = willRefusal(will, replacing: current) {
                return fail(id, error)
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

    private mutating func handleMonitor(_ monitor: Frame.Monitor, on id: ConnectionID) -> Action {
        let sender = mailboxes[id.rawValue].sender
        guard sender.uid == configuration.ownerUID else {
            return fail(
                id,
                WireError(
                    .permissionDenied,
                    "only uid \(configuration.ownerUID), the session's owner, may monitor; this is uid \(sender.uid)",
                    request: monitor.request
                )
            )
        }
        // The rest is SUBSCRIBE `**`'s (wire.md, MONITOR): the same errors, in the same order.
        let subscriptions = connections[id.rawValue]!.subscriptions
        guard subscriptions[monitor.request] == nil else {
            return fail(
                id,
                WireError(
                    .duplicateSubscription,
                    "subscription \(monitor.request) is already live on this connection",
                    request: monitor.request
                )
            )
        }
        guard subscriptions.count < configuration.bounds.maxSubscriptions else {
            return fail(
                id,
                WireError(
                    .tooManySubscriptions,
                    "this connection already holds \(subscriptions.count) subscriptions, the limit",
                    request: monitor.request
                )
            )
        }
        if let error = patternCostRefusal(Self.everything, request: monitor.request, on: id) {
            return fail(id, error)
        }
        mailboxes[id.rawValue].isMonitor = true
        if let will = connections[id.rawValue]!.will.take() {
            charge(will, -1)
            willEnded(connections[id.rawValue]!.willID)
        }
        addSubscription(monitor.request, Self.everything, .dropOldest, on: id)
        enqueueControl(.ack(Frame.Ack(request: monitor.request, sequence: lastSequence)), to: id)
        return .none
    }

    private static let everything = try! Pattern("**")

    /// The most name bytes one `NAMES_REPORT` carries: under the frame limit a client derives from `maxPayload`,
    /// and at most ~60 KB.
    private var namesChunkBytes: Int {
        min(60_000, Limits.maxFrameLength(maxPayload: configuration.bounds.maxPayload) - 64)
    }

    /// Answers `NAMES`: retained names and exact subscriptions, sorted, in frames a client can decode.
    private mutating func answerNames(_ request: UInt32, to id: ConnectionID) -> Action {
        // Bounded before any work: the answer is sorted and queued whole, so its cost (CPU for everyone, memory
        // in the asker's queue, where control frames are never dropped) must not grow with what other clients
        // registered. The two sets are counted apart, so a name in both counts twice: O(1), no union to build.
        let count = retained.count + index.exactNameCount
        guard count <= configuration.bounds.maxNames else {
            return fail(
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
        let names = Set(retained.keys).union(index.exactNames).sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        var chunk: [String] = []
        var size = 0
        for name in names {
            // A frame must fit the client's decoder, which WELCOME's maxPayload sizes; found by the fuzzer.
            if size + 1 + name.utf8.count > namesChunkBytes {
                enqueueControl(.namesReport(Frame.NamesReport(request: request, names: chunk, more: true)), to: id)
                chunk = []
                size = 0
            }
            chunk.append(name)
            size += 1 + name.utf8.count
        }
        enqueueControl(.namesReport(Frame.NamesReport(request: request, names: chunk, more: false)), to: id)
        return .none
    }
}
