import HeraldWire

/// A connection's frames, as they arrive: the handshake, the one dispatch of every frame, and what ends the
/// connection (a frame before `HELLO`, a second `HELLO`, a daemon frame). What a request may be refused for is in
/// Broker+Refusals, the posts in Broker+Posts, the other requests in Broker+Requests.
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
            return refuse(id, error)
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
                enqueueRetained(value.notify, for: get.request, to: id)
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
            return answerNames(names, to: id)
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
        let supported = ProtocolVersion.supported.lowerBound...configuration.maxVersion
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
        // The decoder learns it before the connection's next frame (Broker+Events hands it over).
        mailboxes[id.rawValue].version = high
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
        let sequence = route(
            name: post.name,
            payload: post.payload,
            poster: id,
            sender: mailboxes[id.rawValue].sender,
            now: now
        )
        // As in handlePost: the poster's own queue may have overflowed under DISCONNECT.
        if isClosing(id) { return .closeAfterFlush }
        if post.request != 0 && !post.quiet {
            enqueueControl(.ack(Frame.Ack(request: post.request, sequence: sequence)), to: id)
        }
        return .none
    }
}
