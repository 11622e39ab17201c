import HeraldWire

/// The owner's part in the handshake: heraldd bounds how long a connection may stay without `HELLO`
/// (`--hello-timeout-ms`) and how many may be in that state at once (`--max-incomplete-connections`). The clock
/// and the count are the owner's; the broker says which connections are still waiting and answers them.
extension Broker {
    /// Whether the connection is open and has not completed its handshake: no valid `HELLO` yet.
    ///
    /// False once `WELCOME` is queued, and for a connection that is closing, whatever its handshake reached.
    @inlinable
    public func isAwaitingHello(_ id: ConnectionID) -> Bool {
        mailboxes[id.rawValue].phase == .awaitingHello
    }

    /// The connection sent no `HELLO` within the owner's bound: it gets a final `HELLO_TIMEOUT` error and a
    /// ``BrokerAction/closeAfterFlush(_:)``.
    ///
    /// Nothing changes, and nothing is appended, when the connection is no longer awaiting `HELLO`.
    ///
    /// - Parameter milliseconds: the bound, for the reason the client reads.
    public mutating func helloTimedOut(
        _ id: ConnectionID,
        afterMilliseconds milliseconds: Int,
        into actions: inout [BrokerAction]
    ) {
        guard isAwaitingHello(id) else { return }
        _ = fail(id, WireError(.helloTimeout, "no HELLO within \(milliseconds) ms of connecting"))
        actions.append(.closeAfterFlush(id))
    }

    /// The connection was accepted while `limit` others were awaiting `HELLO`: it gets a final
    /// `TOO_MANY_CONNECTIONS` error and a ``BrokerAction/closeAfterFlush(_:)``, so that idle connections cannot hold
    /// every place.
    ///
    /// Nothing changes, and nothing is appended, when the connection is no longer awaiting `HELLO`.
    public mutating func tooManyIncompleteConnections(
        _ id: ConnectionID,
        limit: Int,
        into actions: inout [BrokerAction]
    ) {
        guard isAwaitingHello(id) else { return }
        actions.append(.closeAfterFlush(id))
        _ = fail(
            id,
            WireError(
                .tooManyConnections,
                "\(limit) connections are already waiting to complete HELLO, the limit"
            )
        )
    }
}
