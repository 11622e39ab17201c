public import HeraldWire

/// What passes between the broker and the daemon's own parts (the plugin supervisor): requests the broker cannot
/// answer alone, subscriptions the daemon wants to hear of, and posts the daemon makes itself.
extension Broker {
    /// A `PLUGIN` request, received and waiting for the daemon's answer.
    public struct PluginRequest: Sendable, Equatable {
        /// The connection that asked.
        public let connection: ConnectionID
        /// What it asked.
        public let frame: Frame.Plugin
    }

    /// Answers a `PLUGIN` request (``BrokerAction/pluginRequest(_:)``): `ACK` when `error` is nil, else `ERROR`
    /// `UNKNOWN_PLUGIN` with that reason: a refusal in version 2, and in version 1 a final error with a
    /// ``BrokerAction/closeAfterFlush(_:)``.
    ///
    /// Answer each request in the turn it was handed over, before the connection's next frames, so a connection's
    /// answers keep the order of its requests. Nothing is appended when the asker has closed meanwhile.
    public mutating func answer(_ request: PluginRequest, error: String?, into actions: inout [BrokerAction]) {
        let id = request.connection
        guard id.rawValue < mailboxes.count, mailboxes[id.rawValue].phase == .ready else { return }
        guard let error else {
            enqueueControl(.ack(Frame.Ack(request: request.frame.request, sequence: lastSequence)), to: id)
            return
        }
        if refuse(id, WireError(.unknownPlugin, error, request: request.frame.request)) == .closeAfterFlush {
            actions.append(.closeAfterFlush(id))
        }
    }

    /// Posts `payload` to `name` as the daemon itself: the one way a name under `herald.` is posted (the plugin
    /// states, `herald.plugin.NAME`). Subscribers see `sender` as its sender.
    ///
    /// - Parameters:
    ///   - name: A valid name; under `herald.` is allowed here.
    ///   - payload: At most the daemon's `maxPayload`.
    ///   - retain: Whether to keep it as the name's retained value (an empty payload clears it).
    ///   - sender: The daemon's own pid, uid and gid.
    ///   - now: The daemon's clock, nanoseconds since 1970.
    /// - Returns: The post's sequence number.
    @discardableResult
    public mutating func postAsDaemon(
        name: String,
        payload: [UInt8],
        retain: Bool,
        sender: Sender,
        now: UInt64
    ) -> UInt64 {
        precondition(Name.isValid(name), "the daemon posted to \"\(name)\", which is not a name")
        precondition(payload.count <= configuration.bounds.maxPayload, "the daemon's post to \(name) is too large")
        return post(name: name, payload: payload, retain: retain, sender: sender, now: now)
    }
}

extension Broker {
    /// The pattern of every subscription now live, for a supervisor that reloads its plugins: a new plugin whose
    /// names are already awaited starts at once.
    public func livePatterns() -> [Pattern] {
        connections.lazy.compactMap { $0 }.flatMap { $0.subscriptions.values.map(\.pattern) }
    }
}
