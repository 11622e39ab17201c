import HeraldWire

/// Posts: a client's `POST`, a will, the daemon's own; the retained values they set; and the one route that numbers
/// a post, encodes its `NOTIFY` once and queues it to its subscribers.
extension Broker {
    mutating func handlePost(_ post: Frame.Post, from id: ConnectionID, now: UInt64) -> Action {
        if let error = refusal(
            name: post.name,
            payloadCount: post.payload.count,
            retain: post.retain,
            request: post.request,
            on: id
        ) {
            return refuse(id, error)
        }
        let sequence = self.post(
            name: post.name,
            payload: post.payload,
            retain: post.retain,
            origin: post.origin,
            poster: id,
            sender: mailboxes[id.rawValue].sender,
            now: now
        )
        // The post may have overflowed the poster's own queue under DISCONNECT: then its final ERROR is queued
        // and nothing may follow it (wire.md: every ERROR is final). Found by the fuzzer.
        if isClosing(id) { return .closeAfterFlush }
        if post.request != 0 && !post.quiet {
            enqueueControl(.ack(Frame.Ack(request: post.request, sequence: sequence)), to: id)
        }
        return .none
    }

    /// Stores or clears the retained value when `retain` is set, then posts on the one route every post takes
    /// (``route(name:payload:sender:now:)``), or, for a post version 2 marks (`RETAIN`, an origin), on
    /// ``routeMarked(_:sender:)``.
    ///
    /// - Returns: The post's sequence number.
    @discardableResult
    mutating func post(
        name: String,
        payload: [UInt8],
        retain: Bool,
        origin: Frame.Origin? = nil,
        poster: ConnectionID? = nil,
        sender: Sender,
        now: UInt64
    ) -> UInt64 {
        let notify = Frame.Notify(
            sequence: lastSequence + 1,
            time: now,
            pid: sender.pid,
            uid: sender.uid,
            gid: sender.gid,
            name: name,
            origin: origin,
            payload: payload
        )
        if retain {
            // Stored before it is routed, as a subscriber being replayed to reads the retained values meanwhile.
            store(notify)
        }
        if retain || origin != nil {
            var marked = notify
            marked.retain = retain
            return routeMarked(marked, poster: poster, sender: sender)
        }
        var name = name
        return name.withUTF8 { nameBytes in
            payload.withUnsafeBytes { payloadBytes in
                route(
                    name: UnsafeRawBufferPointer(nameBytes),
                    payload: payloadBytes,
                    poster: poster,
                    sender: sender,
                    now: now
                )
            }
        }
    }

    /// The one route of every post, whoever made it (a client's `POST` read in place or decoded, a will, the
    /// daemon's own): assigns the next sequence number, finds the subscribers by the name's bytes, encodes the live
    /// `NOTIFY` once into the arena and queues it to each of them.
    ///
    /// - Returns: The post's sequence number.
    // Always inlined: since it takes the poster, the compiler stopped inlining it into postReceived, and the call
    // cost ~38 instructions a post at fan-out 1 (callgrind).
    @inline(__always)
    mutating func route(
        name: UnsafeRawBufferPointer,
        payload: UnsafeRawBufferPointer,
        poster: ConnectionID? = nil,
        sender: Sender,
        now: UInt64
    ) -> UInt64 {
        lastSequence += 1
        posted += 1
        let sequence = lastSequence
        var found = index.matches(ofName: name)
        if let poster { excludeOwnPost(from: &found, poster: poster, name: name) }
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

    /// The route of a post version 2 marks (`RETAIN`, an origin): as ``route(name:payload:sender:now:)``, but the
    /// `NOTIFY` is encoded once per version among the subscribers, as version 1 has neither mark. Plain posts, the
    /// common case, never come here.
    ///
    /// - Returns: The post's sequence number.
    mutating func routeMarked(_ notify: Frame.Notify, poster: ConnectionID?, sender: Sender) -> UInt64 {
        lastSequence += 1
        posted += 1
        let sequence = lastSequence
        var marked = notify
        marked.sequence = sequence
        var name = notify.name
        let found = name.withUTF8 { bytes in
            var found = index.matches(ofName: UnsafeRawBufferPointer(bytes))
            if let poster { excludeOwnPost(from: &found, poster: poster, name: UnsafeRawBufferPointer(bytes)) }
            return found
        }
        guard !found.isEmpty else { return sequence }
        var plain: [ConnectionID] = []
        var current: [ConnectionID] = []
        for id in found {
            if mailboxes[id.rawValue].version >= ProtocolVersion.refusals {
                current.append(id)
            } else {
                plain.append(id)
            }
        }
        for (ids, version) in [(plain, UInt16(1)), (current, ProtocolVersion.refusals)] where !ids.isEmpty {
            let frame = Frame.notify(marked.forVersion(version))
            let size = frame.encodedSize
            if arenaUsed + size > arena.capacity { endTurn() }
            let offset = arenaUsed
            frame.encode(to: UnsafeMutableRawBufferPointer(start: arena.base + offset, count: size))
            arenaUsed += size
            deliver(arenaOffset: offset, size: size, sequence: sequence, to: ids)
        }
        return sequence
    }

    /// Takes the poster out of the connections a post goes to when every one of its subscriptions that the name
    /// matches is `NO_LOCAL` (version 2). One load for a poster with no such subscription, the common case; the scan
    /// of its own subscriptions, which it pays for, only otherwise.
    @inline(__always)
    private func excludeOwnPost(from found: inout [ConnectionID], poster: ConnectionID, name: UnsafeRawBufferPointer) {
        guard mailboxes[poster.rawValue].noLocalCount > 0, let place = found.firstIndex(of: poster) else { return }
        let text = String(decoding: name, as: UTF8.self)
        let subscriptions = connections[poster.rawValue]?.subscriptions ?? [:]
        let taken = subscriptions.values.contains { !$0.noLocal && $0.pattern.matches(text) }
        if !taken { found.remove(at: place) }
    }

    /// Queues a retained value replayed for one `SUBSCRIBE` or `GET` (`request`), as the connection's version has it.
    mutating func enqueueRetained(_ value: Frame.Notify, for request: UInt32, to id: ConnectionID) {
        var notify = value.forVersion(mailboxes[id.rawValue].version)
        notify.subscription = request
        notify.retained = true
        enqueueControl(.notify(notify), to: id)
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
    mutating func store(_ notify: Frame.Notify) {
        let name = notify.name
        if let old = retained[name] {
            retainedBytes -= Self.retainedCost(name: name, payloadCount: old.notify.payload.count)
            retainedOriginBytes -= Self.originRecordSize(old.notify.origin)
        }
        if notify.payload.isEmpty {
            retained[name] = nil
        } else {
            retained[name] = Retained(notify: notify)
            retainedBytes += Self.retainedCost(name: name, payloadCount: notify.payload.count)
            retainedOriginBytes += Self.originRecordSize(notify.origin)
            retainedLog.append(sequence: notify.sequence, name: name)
        }
        journalRetained(notify)
        let values = retained
        retainedLog.compact(current: values.count) { values[$0.name]?.notify.sequence == $0.sequence }
    }

    /// Queues the live `NOTIFY` encoded at `offset` in the arena to each of `ids`.
    mutating func deliver(arenaOffset offset: Int, size: Int, sequence: UInt64, to ids: [ConnectionID]) {
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
}
