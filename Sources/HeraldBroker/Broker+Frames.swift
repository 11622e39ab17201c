public import HeraldWire

extension Broker {
    /// A whole frame arrived on a connection, decoded and checked by `FrameDecoder(role: .daemon)`.
    ///
    /// - Parameters:
    ///   - now: The daemon's clock, nanoseconds since 1970; it stamps posts.
    public mutating func frameReceived(_ frame: Frame, from id: ConnectionID, now: UInt64) -> Action {
        guard let connection = connections[id.rawValue] else {
            preconditionFailure("frame from connection \(id), which is not open")
        }
        switch connection.phase {
        case .closing:
            return .closeAfterFlush
        case .awaitingHello:
            guard case .hello(let hello) = frame else {
                return fail(id, WireError(.helloRequired, "the first frame must be HELLO, not \(frame.type)"))
            }
            return handshake(hello, on: id)
        case .ready:
            break
        }
        switch frame {
        case .hello:
            return fail(id, WireError(.unexpectedHello, "HELLO was already received on this connection"))
        case .post(let post):
            return handlePost(post, from: id, now: now)
        case .subscribe(let subscribe):
            return handleSubscribe(subscribe, on: id)
        case .unsubscribe(let unsubscribe):
            guard let pattern = connections[id.rawValue]!.subscriptions.removeValue(forKey: unsubscribe.subscription)
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
            index.remove(pattern, for: id)
            subscriptionCount -= 1
            return .none
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
            connections[id.rawValue]!.phase = .closing
            return .closeAfterFlush
        case .welcome, .notify, .ack, .dropped, .error, .statusReport:
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
        connections[id.rawValue]!.phase = .ready
        connections[id.rawValue]!.client = hello.client
        let welcome = Frame.Welcome(
            version: high,
            maxSubscriptions: UInt16(clamping: configuration.maxSubscriptions),
            maxPayload: UInt32(clamping: configuration.maxPayload),
            daemonPID: UInt32(bitPattern: configuration.daemonPID),
            server: configuration.server
        )
        enqueueControl(.welcome(welcome), to: id)
        return .none
    }

    private mutating func handlePost(_ post: Frame.Post, from id: ConnectionID, now: UInt64) -> Action {
        if Name.isReserved(post.name) {
            return fail(
                id,
                WireError(
                    .reservedName,
                    "\"\(post.name)\" is reserved: names under \(Name.reservedPrefix). are the library's notices",
                    request: post.request
                )
            )
        }
        if post.retain && !post.payload.isEmpty && retained[post.name] == nil
            && retained.count >= configuration.maxRetained
        {
            return fail(
                id,
                WireError(
                    .tooManyRetained,
                    "\(retained.count) names already have a retained value, the limit is \(configuration.maxRetained)",
                    request: post.request
                )
            )
        }
        lastSequence += 1
        posted += 1
        let sequence = lastSequence
        let sender = connections[id.rawValue]!.sender
        let notify = Frame.Notify(
            sequence: sequence,
            time: now,
            pid: sender.pid,
            uid: sender.uid,
            gid: sender.gid,
            name: post.name,
            payload: post.payload
        )
        if post.retain {
            retained[post.name] = post.payload.isEmpty ? nil : Retained(notify: notify)
        }
        deliver(notify)
        if post.request != 0 {
            enqueueControl(.ack(Frame.Ack(request: post.request, sequence: sequence)), to: id)
        }
        return .none
    }

    /// Queues one live post to every connection with a matching subscription, once per connection,
    /// from bytes encoded once.
    private mutating func deliver(_ notify: Frame.Notify) {
        var found: [ConnectionID] = []
        swap(&found, &matches)
        index.forEachMatch(of: notify.name) { found.append($0) }
        if !found.isEmpty {
            let frame = EncodedFrame(.notify(notify))
            for id in found {
                guard var connection = connections[id.rawValue] else { continue }
                guard connection.lastSequence != notify.sequence, connection.phase == .ready else { continue }
                connections[id.rawValue] = nil  // take it out so the queue is mutated in place, not copied
                connection.lastSequence = notify.sequence
                dropped += UInt64(connection.queue.enqueueLive(frame, sequence: notify.sequence))
                if !connection.isUrgent && connection.queue.queuedBytes * 2 > connection.queue.limit {
                    connection.isUrgent = true
                    urgent.append(id)
                }
                connections[id.rawValue] = connection
                markDirty(id)
            }
        }
        found.removeAll(keepingCapacity: true)
        swap(&found, &matches)
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
        guard subscriptions.count < configuration.maxSubscriptions else {
            return fail(
                id,
                WireError(
                    .tooManySubscriptions,
                    "this connection already holds \(subscriptions.count) subscriptions, the limit",
                    request: subscribe.subscription
                )
            )
        }
        connections[id.rawValue]!.subscriptions[subscribe.subscription] = subscribe.pattern
        index.insert(subscribe.pattern, for: id)
        subscriptionCount += 1
        // Retained values first, oldest post first, then the ACK: wire.md's "no gap".
        var replay: [Frame.Notify] = []
        if subscribe.pattern.isExact {
            if let value = retained[subscribe.pattern.text] { replay.append(value.notify) }
        } else {
            for (name, value) in retained where subscribe.pattern.matches(name) {
                replay.append(value.notify)
            }
            replay.sort { $0.sequence < $1.sequence }
        }
        for var notify in replay {
            notify.subscription = subscribe.subscription
            notify.retained = true
            enqueueControl(.notify(notify), to: id)
        }
        enqueueControl(.ack(Frame.Ack(request: subscribe.subscription, sequence: lastSequence)), to: id)
        return .none
    }
}
