public import HeraldWire

/// What the owner of a ``Broker`` must do after an event, as an imperative verb: the broker's events append these
/// into a buffer the owner reuses (no allocation once it is warm), and the owner carries them out in order.
///
/// The owner does all I/O; the broker only decides. A connection named here may have been closed by an earlier
/// action of the same buffer: the owner skips those.
public enum BrokerAction: Equatable, Sendable {
    /// Write the connection's pending output now, before the next read: its queue passed half its bound while
    /// frames were handled, and the socket buffer is the first place output should wait. (At the end of a turn
    /// ``Broker/turnEnding(into:)`` asks the same for every connection with new output.)
    case write(ConnectionID)
    /// Stop reading the connection, write what is queued for it (within the owner's close bound), then close it.
    case closeAfterFlush(ConnectionID)
    /// The connection is closing and its last byte is written: close it now.
    case close(ConnectionID)
    /// Watch the connection for readability while `reading`, and for room to write while `writing`. Appended only
    /// when it changes what the owner was last told (a connection starts watched for reading only).
    case watch(ConnectionID, reading: Bool, writing: Bool)
    /// Input of the connection waits in its decoder after this buffer's writes: hand it in with
    /// ``Broker/readBuffered(on:now:into:)`` once they are done.
    case readAgain(ConnectionID)
    /// The connection's handshake is over (`WELCOME` queued, or it failed): its `HELLO` timer can go.
    case handshakeEnded(ConnectionID)
    /// The connection broke the protocol, as the decoder found; a ``closeAfterFlush(_:)`` follows. For the log.
    case protocolViolation(ConnectionID, WireError)
    /// The queued output of all connections passed `maxQueuedBytes` and was shed: `dropped` live frames, and
    /// `disconnected` connections (each also in a ``closeAfterFlush(_:)``). For the log.
    case shedOutput(dropped: Int, disconnected: Int)
    /// A `PLUGIN` request for the owner's supervisor: answer it with ``Broker/answer(_:error:into:)`` before the
    /// connection's next frames, which wait (a ``readAgain(_:)`` follows when there are any).
    case pluginRequest(Broker.PluginRequest)
    /// A subscription to `pattern` began, while ``Broker/reportsSubscriptions`` is on: a plugin may await it.
    case subscribed(Pattern)
    /// Read another round of ready connections before writing this turn's output
    /// (``Broker/readRoundEnded(into:)``); the owner bounds how many.
    case readAnotherRound
    /// Call ``Broker/postDueWills(monotonicNow:realtimeNow:)`` at this monotonic time: the earliest pending will
    /// changed. Replaces any wake-up asked for before.
    case wakeAt(UInt64)
}
