import HeraldPosix
import HeraldWire
import Synchronization
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A connection to the session's Herald daemon: NotificationCenter for a whole desktop session.
///
/// ```swift
/// let herald = try await Herald.connect()
/// for await notification in try await herald.notifications(matching: "session.*") {
///     print(notification.name, notification.userInfo ?? [:])
/// }
/// ```
///
/// One `Herald` is one socket at a time, read by one background thread (or a ``ReaderGroup``'s). Every method may be
/// called from any task. When the daemon goes away, the Herald reconnects by itself (``Options/reconnects``) and
/// re-subscribes every live subscription, telling each stream with a `herald.reconnected` notice; a stream is then
/// always live on the current connection, waiting for the next, or ended with its reason
/// (``HeraldNotifications/endReason``). It ends with ``close()``, or when the last reference to this object (or to a
/// stream made from it) is released.
public final class Herald: Sendable {
    let current: Mutex<Connection>
    /// The reconnection's decisions and the tasks carrying them out, under one lock: a task is started and stored
    /// in the same step as the loss that calls for it, so ``close()`` finds every task there is and none starts after.
    let reconnection = Mutex(Reconnection())
    let path: String
    let options: Options

    /// The connection in use now.
    var connection: Connection { current.withLock { $0 } }

    private init(connection: Connection, path: String, options: Options) {
        self.current = Mutex(connection)
        self.path = path
        self.options = options
    }

    deinit {
        let reason = HeraldError(.disconnected, "the Herald was released")
        let (tasks, waiting) = reconnection.withLock { ($0.tasks.values, $0.machine.closeRequested(reason)) }
        for task in tasks { task.cancel() }
        for stream in waiting { stream.continuation.finish(reason) }
        // Nothing can use the connection any more. Posts still queued are written first; then the socket is shut
        // down, which ends the reader thread.
        current.withLock { $0 }.endWhenWritten(reason)
    }

    /// An executor that runs tasks on this Herald's reader thread, for consumers that want every notification at the
    /// least cost:
    ///
    /// ```swift
    /// let stream = try await herald.notifications(matching: "build.**")
    /// Task(executorPreference: herald.taskExecutor) {
    ///     for await notification in stream { handle(notification) }
    /// }
    /// ```
    ///
    /// A stream's consumer on the global executor is woken on another thread for each batch the reader routes to it;
    /// a task preferring this executor runs on the reader thread itself, right after the read that fed it, so a burst
    /// costs no thread hand-off. While such a task runs, the Herald reads nothing, which is flow control: the daemon
    /// keeps what the consumer has not taken, within its bounds. So do not block the thread waiting for something
    /// that only the reader can deliver (`await` is fine: it gives the thread back). For a Herald in a
    /// ``ReaderGroup`` the reader thread is the group's thread that reads this connection, with others: a task on it
    /// holds those up too while it runs. Between connections, after the Herald closes, and where the reader cannot be
    /// woken for them (no eventfd: not Linux), the tasks run on one thread the process's Heralds share, which sleeps
    /// while it has nothing to run.
    ///
    /// It is also how an app that must not wake while nothing happens stays asleep: the Herald's reader threads
    /// sleep in the kernel, but once the global concurrent executor has a thread, libdispatch's workqueue monitor
    /// wakes the process once a second. Work kept on this executor (and on executors of the app's own) does not arm
    /// it.
    public var taskExecutor: any TaskExecutor { connection.executor }

    /// Connects to the session's daemon and completes the `HELLO`/`WELCOME` handshake.
    ///
    /// - Parameters:
    ///   - socketPath: the daemon's socket; nil takes ``defaultSocketPath``.
    ///   - options: the client's label, the request timeout and a logger.
    /// - Returns: a connected Herald.
    /// - Throws: ``HeraldError/Code/daemonUnavailable`` when no daemon listens on the path (the message names it
    ///   and says how to start one), ``HeraldError/Code/timedOut``, ``HeraldError/Code/cancelled``, or
    ///   ``HeraldError/Code/daemonError`` when the daemon refuses the connection.
    public static func connect(
        socketPath: String? = nil,
        options: Options = Options()
    ) async throws(HeraldError) -> Herald {
        let path = socketPath.flatMap { $0.isEmpty ? nil : $0 } ?? defaultSocketPath
        // Its own count of refused posts, even when the app connects several Heralds with one Options value.
        var options = options
        options.refusals = RefusalLedger()
        let executor = ReaderExecutor()
        let connection = try await Connection.open(socketPath: path, options: options, executor: executor)
        let herald = Herald(connection: connection, path: path, options: options)
        if options.reconnects { herald.watch(connection, generation: 0) }
        do {
            try await herald.prepare(connection)
        } catch {
            connection.fail(error, local: true)
            await herald.close()
            throw error
        }
        return herald
    }

    /// Registers the will, if there is one, on a connection just opened.
    func prepare(_ connection: Connection) async throws(HeraldError) {
        if let will = options.will {
            try Self.validate(name: will.name)
            _ = try await connection.request(.acknowledgement, "WILL") { id in will.frame(request: id) }
        }
    }

    /// The path of the daemon's socket.
    public var socketPath: String { connection.socketPath }

    /// The daemon's process id, from `WELCOME`.
    public var daemonPID: Int32 { Int32(bitPattern: connection.welcome.daemonPID) }

    /// The largest payload the daemon accepts, in bytes, from `WELCOME`.
    public var maxPayload: Int { Int(connection.welcome.maxPayload) }

    /// How many subscriptions this connection may hold at once, from `WELCOME`.
    public var maxSubscriptions: Int { Int(connection.welcome.maxSubscriptions) }

    /// The daemon's name and version, from `WELCOME`, e.g. `heraldd 0.1.0`.
    public var serverName: String { connection.welcome.server }

    /// Why the connection ended: the daemon went away or sent an `ERROR`, or this process closed it; nil while it
    /// is open. While reconnecting it says why the last connection ended.
    public var disconnectReason: HeraldError? { connection.closedReason }

    /// Whether the Herald is connected to the daemon now.
    public var isConnected: Bool { connection.closedReason == nil }

    // MARK: Posting

    /// Posts `userInfo` as a JSON object to `name`.
    ///
    /// When this returns, the post is queued, in order, in the connection's bounded outgoing buffer, or already
    /// written to the socket; it does not wait for the daemon. A post made while the daemon has not yet read an
    /// earlier write, or made while another post is being written, joins one buffered write with them; a lone post
    /// is written at once, with no timer and no added latency. Posts from one connection reach the daemon in the
    /// order their calls were made, and it processes them in that order. When the buffer is full (the daemon reads
    /// slower than this process posts), `post` suspends until there is room: it never drops a post, and the buffer
    /// never grows past its bound.
    ///
    /// Queued posts are written before ``close()`` says goodbye. Use ``flush()`` to wait until the daemon has
    /// processed them, or ``postAcknowledged(_:payload:retain:origin:)`` for one post's sequence number.
    ///
    /// It runs in the caller's isolation (`nonisolated(nonsending)`): a post from the main actor stays on the main
    /// actor, and a post from a task stays on that task's executor. Queuing a post never blocks, so there is nothing
    /// to move off the caller's executor, and not hopping saves two executor switches per post.
    ///
    /// - Parameters:
    ///   - name: a name (Protocols/wire.md), not under `herald.`.
    ///   - userInfo: the payload; nil posts `{}`.
    ///   - retain: also store the payload as the name's retained value.
    /// - Throws: ``HeraldError/Code/invalidName``, ``HeraldError/Code/reservedName`` or
    ///   ``HeraldError/Code/payloadTooLarge``, found before anything is sent, so the connection stays usable; or why
    ///   the connection ended, which also loses the posts still queued.
    public nonisolated(nonsending) func post(
        _ name: String,
        userInfo: [String: JSONValue]? = nil,
        retain: Bool = false
    ) async throws(HeraldError) {
        try await post(name, payload: JSONValue.encodeObject(userInfo ?? [:]), retain: retain)
    }

    /// Posts raw bytes to `name`; see ``post(_:userInfo:retain:)``.
    ///
    /// An empty payload with `retain` clears the name's retained value. The payload is delivered byte for byte.
    ///
    /// A daemon that speaks version 2 answers a post it refuses (a bound such as `TOO_MANY_RETAINED`), and the
    /// connection goes on; since nobody awaits this post, the refusal is counted in ``refusedPosts`` and logged to
    /// the ``Options/logger`` (at most a line a second). Use ``postAcknowledged(_:payload:retain:origin:)`` to have
    /// it thrown instead.
    ///
    /// - Parameter origin: where the post was first made, for a bridge relaying it; every subscriber receives it as
    ///   ``HeraldNotification/origin``. A version 1 daemon cannot carry it: it is left out.
    public nonisolated(nonsending) func post(
        _ name: String,
        payload: [UInt8],
        retain: Bool = false,
        origin: HeraldNotification.Origin? = nil
    ) async throws(HeraldError) {
        let connection = self.connection
        try Self.checkPost(name, payloadSize: payload.count, maxPayload: Int(connection.welcome.maxPayload))
        guard connection.answersRefusals else {
            try await connection.post(Frame.post(Frame.Post(request: 0, name: name, payload: payload, retain: retain)))
            return
        }
        let frame = Frame.Post(
            request: connection.quietPostID(),
            name: name,
            payload: payload,
            retain: retain,
            quiet: true,
            origin: try origin.map(Self.wireOrigin)
        )
        try await connection.post(Frame.post(frame))
    }

    /// Posts that the daemon refused and nobody awaited (``post(_:payload:retain:origin:)``), since this Herald
    /// connected; each was also logged. Always 0 with a version 1 daemon, which ends the connection instead.
    public var refusedPosts: Int { options.refusals.count }

    /// ``refusedPosts`` by the wire code of each refusal (``HeraldError/wireCodeName(_:)`` names them).
    public var refusedPostsByWireCode: [UInt16: Int] { options.refusals.countsByCode }

    /// The protocol version the daemon chose in `WELCOME`: 2 when it answers a refusal and goes on, and carries
    /// origins and ``HeraldNotification/updatesRetainedValue``; 1 for an older daemon.
    public var protocolVersion: Int { Int(connection.welcome.version) }

    /// Posts raw bytes to `name` and waits for the daemon's `ACK`.
    ///
    /// - Returns: the post's sequence number. After this returns, the daemon has delivered the post to every
    ///   subscription live at that moment (queued it for their connections).
    /// - Throws: as ``post(_:payload:retain:origin:)``, ``HeraldError/Code/refused`` with the wire code when a
    ///   version 2 daemon refuses it (the connection goes on), and ``HeraldError/Code/timedOut`` or
    ///   ``HeraldError/Code/cancelled`` while waiting.
    @discardableResult
    public func postAcknowledged(
        _ name: String,
        payload: [UInt8],
        retain: Bool = false,
        origin: HeraldNotification.Origin? = nil
    ) async throws(HeraldError) -> UInt64 {
        try Self.checkPost(name, payloadSize: payload.count, maxPayload: maxPayload)
        let wire = connection.answersRefusals ? try origin.map(Self.wireOrigin) : nil
        let reply = try await connection.request(.acknowledgement, "POST to \(name)") { id in
            .post(Frame.Post(request: id, name: name, payload: payload, retain: retain, origin: wire))
        }
        guard case .sequence(let sequence) = reply else { preconditionFailure("POST answered with \(reply)") }
        return sequence
    }

    /// Posts a typed message to `Message.name`, encoded with JSONEncoder (sorted keys).
    ///
    /// - Throws: as ``post(_:payload:retain:origin:)``, and ``HeraldError/Code/encodingFailed`` when the message does not
    ///   encode.
    public nonisolated(nonsending) func post<Message: HeraldMessage>(
        _ message: Message,
        retain: Bool = false
    ) async throws(HeraldError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let data: Data
        do {
            data = try encoder.encode(message)
        } catch {
            throw HeraldError(.encodingFailed, "cannot encode \(Message.self) as JSON: \(error)")
        }
        try await post(Message.name, payload: [UInt8](data), retain: retain)
    }

    /// Waits until every post made so far on this connection is written to the daemon's socket.
    ///
    /// After this returns, those posts are in the kernel's hands: the daemon reads them even if this process exits
    /// or is killed now. It does not wait for the daemon to process them, which ``flush()`` does at the price of a
    /// round trip. A bridge uses it to acknowledge a message upstream once it can no longer be lost here. While the
    /// daemon reads nothing, this waits at most `Options.requestTimeout`, after which the connection ends.
    ///
    /// - Throws: why the connection ended, if it has (posts not yet written when it ended are lost), or
    ///   ``HeraldError/Code/cancelled`` when the task was cancelled (it returns at once; the posts stay queued).
    public func waitUntilWritten() async throws(HeraldError) {
        let connection = self.connection
        await connection.drainOutput()
        if let reason = connection.closedReason { throw reason }
        if Task.isCancelled {
            throw HeraldError(.cancelled, "the task waiting for the posts to be written was cancelled")
        }
    }

    /// A barrier: sends `PING` and waits for its `ACK`.
    ///
    /// - Returns: the last sequence number the daemon assigned. After this returns, the daemon has processed every
    ///   frame this connection sent before it, posts included.
    /// - Throws: ``HeraldError/Code/timedOut``, ``HeraldError/Code/cancelled``, or why the connection ended.
    @discardableResult
    public func flush() async throws(HeraldError) -> UInt64 {
        let reply = try await connection.request(.acknowledgement, "PING") { id in .ping(Frame.Ping(request: id)) }
        guard case .sequence(let sequence) = reply else { preconditionFailure("PING answered with \(reply)") }
        return sequence
    }

    // MARK: Closing

    /// Sends `BYE`, ends every stream, closes the socket, and waits for the reader thread to end.
    ///
    /// Stops reconnecting first: a reconnect under way is abandoned at once, whatever the daemon does (a handshake
    /// or a subscription waiting for an answer is cancelled), and its connection closed. Queued posts are written
    /// before `BYE`, waiting at most `Options.requestTimeout` for a daemon that reads nothing. Idempotent. After it returns, ``disconnectReason`` is set and every operation throws it.
    public func close() async {
        let reason = HeraldError(.disconnected, "the Herald was closed by this process")
        let (tasks, waiting) = reconnection.withLock { ($0.tasks.values, $0.machine.closeRequested(reason)) }
        for stream in waiting { stream.continuation.finish(reason) }
        // A task in a handshake, a registration or a sleep ends at once when cancelled; one that opened a connection
        // meanwhile closes it before it ends, since the machine has ended.
        for task in tasks { task.cancel() }
        for task in tasks { await task.value }
        await connection.close()
    }

    // MARK: Checks

    /// The origin as the wire carries it, checked: a `str8` holds at most 255 bytes, and the host is not empty.
    private static func wireOrigin(_ origin: HeraldNotification.Origin) throws(HeraldError) -> Frame.Origin {
        let host = origin.host.utf8.count
        guard (1...255).contains(host), origin.daemon.utf8.count <= 255 else {
            throw HeraldError(
                .encodingFailed,
                "cannot post with origin host \"\(origin.host)\" and daemon \"\(origin.daemon)\": the host takes 1 to "
                    + "255 bytes of UTF-8 and the daemon at most 255"
            )
        }
        return Frame.Origin(host: origin.host, daemon: origin.daemon, sequence: origin.sequence)
    }

    private static func checkPost(_ name: String, payloadSize: Int, maxPayload: Int) throws(HeraldError) {
        // Most names are plain ASCII, which is checked byte by byte; the full check walks Unicode scalars.
        var utf8 = name
        if !utf8.withUTF8({ Name.isPlainASCIIName(UnsafeRawBufferPointer($0)) }) {
            try validate(name: name)
        }
        if Name.isReserved(name) {
            throw HeraldError(
                .reservedName,
                "cannot post to \(name): names under '\(Name.reservedPrefix).' are reserved for the library's notices"
            )
        }
        if payloadSize > maxPayload {
            throw HeraldError(
                .payloadTooLarge,
                "cannot post \(payloadSize) bytes to \(name): heraldd accepts payloads of at most \(maxPayload) bytes"
            )
        }
    }

}
