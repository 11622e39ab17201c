/// What an ``HTTPServer`` calls to answer requests and run streams. Every call happens on the server's loop thread,
/// one at a time; a handler may call the server's ``HTTPServer/send(_:to:)`` and ``HTTPServer/finish(_:)`` from
/// inside them, and those take effect after the call returns.
public protocol HTTPHandler: AnyObject {
    /// Answers one request.
    ///
    /// - Returns: a complete response, or the head of a chunked stream; in the second case
    ///   ``streamStarted(_:server:)`` follows, unless the server already holds
    ///   ``HTTPServer/Configuration/maximumStreams`` streams: then it answers 503 itself and the handler hears
    ///   nothing more of this request.
    func handle(_ request: HTTPRequest, on connection: HTTPServer.ConnectionID, server: HTTPServer) -> HTTPServer.Reply

    /// A stream's head has been queued; chunks sent with ``HTTPServer/send(_:to:)`` follow it.
    func streamStarted(_ connection: HTTPServer.ConnectionID, request: HTTPRequest, server: HTTPServer)

    /// A stream ended because the client went away, an I/O error occurred, or the server is stopping; not called for
    /// streams the handler ended itself with ``HTTPServer/finish(_:)``.
    func streamClosed(_ connection: HTTPServer.ConnectionID, server: HTTPServer)

    /// `bytes` of chunk payload sent with ``HTTPServer/send(_:to:)`` have been written to the stream's socket.
    func streamDrained(_ connection: HTTPServer.ConnectionID, bytes: Int, server: HTTPServer)

    /// When the handler next wants ``deadlineReached(server:)``, in ``SystemClock/monotonicNanoseconds()``; nil for
    /// never.
    var nextDeadline: UInt64? { get }

    /// The time in ``nextDeadline`` has come.
    func deadlineReached(server: HTTPServer)
}
