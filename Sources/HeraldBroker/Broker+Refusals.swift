import HeraldWire

/// Refusals (wire.md, "Refusals and fatal errors"): what a well-formed request may be declined for, and how the
/// answer goes out. In version 2 a refusal is answered and the connection goes on as it was; in version 1, and for
/// a fatal code, the `ERROR` is final (``fail(_:_:)``).
extension Broker {
    /// Answers a request the daemon declines with `error`: in version 2, for a refusal's code, an `ERROR` with
    /// `REFUSAL` set, after which the connection goes on exactly as it was; otherwise the final `ERROR`.
    ///
    /// The request must have had no effect yet: every caller checks before it changes anything.
    mutating func refuse(_ id: ConnectionID, _ error: WireError) -> Action {
        guard mailboxes[id.rawValue].version >= ProtocolVersion.refusals, error.code.isRefusal else {
            return fail(id, error)
        }
        var refusal = error
        refusal.isRefusal = true
        enqueueControl(.error(refusal), to: id)
        return .none
    }

    /// Input the decoder refused on a ready version 2 connection (an invalid name or pattern, a payload over the
    /// limit: the frame was read whole, so the next one's start is known): answered as a refusal. Nil when the
    /// error ends the connection instead.
    mutating func refusedInput(_ error: WireError, on id: ConnectionID) -> Action? {
        guard error.code.isRefusal, mailboxes[id.rawValue].phase == .ready,
            mailboxes[id.rawValue].version >= ProtocolVersion.refusals
        else { return nil }
        return refuse(id, error)
    }

    /// The error for a name or pattern longer than `--max-name-bytes`, which may be set below the protocol's 255.
    func overlongName(in frame: Frame) -> WireError? {
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
    func refusal(
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

    /// The error for a pattern that would take the connection's pattern cost past `maxPatternCost`.
    ///
    /// A wildcard pattern's segments bound its memory and what it adds to the matching of every post (a lookup for
    /// its shape, a step per `*`): the sum is charged to the connection and bounded like its queue.
    /// Why subscription `subscription` to `pattern` may not be added on `id`, in wire.md's order: an id already live,
    /// the connection's subscription limit, its pattern cost. Nil when it may. `SUBSCRIBE` and `MONITOR` (`**`)
    /// both ask.
    func subscriptionRefusal(_ subscription: UInt32, _ pattern: Pattern, on id: ConnectionID) -> WireError? {
        let subscriptions = connections[id.rawValue]!.subscriptions
        guard subscriptions[subscription] == nil else {
            return WireError(
                .duplicateSubscription,
                "subscription \(subscription) is already live on this connection",
                request: subscription
            )
        }
        guard subscriptions.count < configuration.bounds.maxSubscriptions else {
            return WireError(
                .tooManySubscriptions,
                "this connection already holds \(subscriptions.count) subscriptions, the limit",
                request: subscription
            )
        }
        return patternCostRefusal(pattern, request: subscription, on: id)
    }

    func patternCostRefusal(_ pattern: Pattern, request: UInt32, on id: ConnectionID) -> WireError? {
        let held = connections[id.rawValue]!.patternCost
        guard held + pattern.cost > configuration.bounds.maxPatternCost else { return nil }
        return WireError(
            .patternTooComplex,
            "this pattern costs \(pattern.cost) (its segments) and this connection's patterns already cost \(held), "
                + "the limit is \(configuration.bounds.maxPatternCost)",
            request: request
        )
    }
}
