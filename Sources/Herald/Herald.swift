import Foundation
import HeraldPosix
import HeraldWire
import Synchronization

/// A connection to the session's Herald daemon: NotificationCenter for a whole desktop session.
///
/// ```swift
/// let herald = try await Herald.connect()
/// for await notification in try await herald.notifications(matching: "session.*") {
///     print(notification.name, notification.userInfo ?? [:])
/// }
/// ```
///
/// One `Herald` is one socket at a time, read by one background thread. Every method may be called from any task.
/// When the daemon goes away, the Herald reconnects by itself (``Options/reconnects``) and re-subscribes every live
/// subscription, telling each stream with a `herald.reconnected` notice. It ends with ``close()``, or when the last
/// reference to this object (or to a stream made from it) is released.
public final class Herald: Sendable {
    private let current: Mutex<Connection>
    /// The task reconnecting after a loss, if one is running; cancelled by `close()` and on release.
    private let supervisor = Mutex<Task<Void, Never>?>(nil)
    private let closed = Atomic<Bool>(false)
    private let path: String
    private let options: Options

    /// The connection in use now.
    var connection: Connection { current.withLock { $0 } }

    private init(connection: Connection, path: String, options: Options) {
        self.current = Mutex(connection)
        self.path = path
        self.options = options
    }

    deinit {
        supervisor.withLock { $0?.cancel() }
        // Nothing can use the connection any more. Posts still queued are written first; then the socket is shut
        // down, which ends the reader thread.
        current.withLock { $0 }.endWhenWritten(HeraldError(.disconnected, "the Herald was released"))
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
    /// that only the reader can deliver (`await` is fine: it gives the thread back). Between connections, after the
    /// Herald closes, and where the reader cannot be woken for them (no eventfd: not Linux), the tasks run on the
    /// global concurrent executor.
    public var taskExecutor: any TaskExecutor { connection.executor }

    /// Connects to the session's daemon and completes the `HELLO`/`WELCOME` handshake.
    ///
    /// - Parameters:
    ///   - socketPath: the daemon's socket; nil takes ``defaultSocketPath``.
    ///   - options: the client's label, the request timeout and a logger.
    /// - Returns: a connected Herald.
    /// - Throws: ``HeraldError/Code/daemonUnavailable`` when no daemon listens on the path (the message names it
    ///   and says how to start one), ``HeraldError/Code/timedOut``, or ``HeraldError/Code/daemonError`` when the
    ///   daemon refuses the connection.
    public static func connect(
        socketPath: String? = nil,
        options: Options = Options()
    ) async throws(HeraldError) -> Herald {
        let path = socketPath.flatMap { $0.isEmpty ? nil : $0 } ?? defaultSocketPath
        let executor = ReaderExecutor()
        let connection = try await Connection.open(socketPath: path, options: options, executor: executor)
        let herald = Herald(connection: connection, path: path, options: options)
        do {
            try await herald.prepare(connection)
        } catch {
            connection.fail(error, local: true)
            throw error
        }
        return herald
    }

    /// Registers the will and, with ``Options/reconnects``, the hand-over of subscriptions on loss.
    private func prepare(_ connection: Connection) async throws(HeraldError) {
        if let will = options.will {
            try Self.validate(name: will.name)
            _ = try await connection.request(.acknowledgement, "WILL") { id in will.frame(request: id) }
        }
        guard options.reconnects else { return }
        connection.lostHandler.withLock { handler in
            handler = { [weak self] subscriptions in
                guard let self else {
                    for subscription in subscriptions { subscription.continuation.finish() }
                    return
                }
                self.connectionLost(subscriptions)
            }
        }
    }

    /// Starts reconnecting, carrying `subscriptions` over.
    private func connectionLost(_ subscriptions: [Subscription]) {
        guard !closed.load(ordering: .acquiring) else {
            for subscription in subscriptions { subscription.continuation.finish() }
            return
        }
        options.logger?.info("lost the connection to heraldd; reconnecting")
        // The task holds the Herald only while an attempt runs, never while it sleeps: a Herald nobody uses any
        // more is released, and the task ends with it.
        let task = Task { [weak self] in
            var delay = Duration.milliseconds(50)
            while !Task.isCancelled {
                let connected: Bool
                do {
                    guard let herald = self, !herald.closed.load(ordering: .acquiring) else { break }
                    connected = await herald.attemptReconnection(carrying: subscriptions, retryingIn: delay)
                }
                if connected { return }
                do {
                    try await Task.sleep(for: delay)
                } catch {
                    break
                }
                delay = min(delay * 2, .seconds(2))
            }
            for subscription in subscriptions { subscription.continuation.finish() }
        }
        supervisor.withLock { $0 = task }
    }

    /// Connects once more and, if that works, moves every subscription over, each announced by a
    /// `herald.reconnected` notice ahead of its retained values.
    ///
    /// - Returns: whether it connected.
    private func attemptReconnection(carrying lost: [Subscription], retryingIn delay: Duration) async -> Bool {
        let connection: Connection
        do throws(HeraldError) {
            connection = try await Connection.open(
                socketPath: path,
                options: options,
                executor: self.connection.executor
            )
            current.withLock { $0 = connection }
            try await prepare(connection)
        } catch {
            options.logger?.debug("reconnecting to heraldd failed: \(error); next attempt in \(delay)")
            return false
        }
        options.logger?.info("reconnected to heraldd on \(path)")
        // Register concurrently: each waits for its own ACK. If the new connection is lost meanwhile, its lost
        // handler carries every subscription it holds into the next attempt.
        await withTaskGroup(of: Void.self) { group in
            for var subscription in lost {
                subscription.announceReconnection(connection.noticeSender)
                subscription.continuation.flush()
                group.addTask {
                    do throws(HeraldError) {
                        try await connection.register(subscription)
                    } catch {
                        // Refused on a live connection: nothing will feed this stream again.
                        if connection.closedReason == nil { subscription.continuation.finish() }
                    }
                }
            }
        }
        return true
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
    /// processed them, or ``postAcknowledged(_:payload:retain:)`` for one post's sequence number.
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
    /// An empty payload with `retain` clears the name's retained value.
    public nonisolated(nonsending) func post(
        _ name: String,
        payload: [UInt8],
        retain: Bool = false
    ) async throws(HeraldError) {
        let connection = self.connection
        try Self.checkPost(name, payloadSize: payload.count, maxPayload: Int(connection.welcome.maxPayload))
        try await connection.post(Frame.post(Frame.Post(request: 0, name: name, payload: payload, retain: retain)))
    }

    /// Posts raw bytes to `name` and waits for the daemon's `ACK`.
    ///
    /// - Returns: the post's sequence number. After this returns, the daemon has delivered the post to every
    ///   subscription live at that moment (queued it for their connections).
    /// - Throws: as ``post(_:payload:retain:)``, and ``HeraldError/Code/timedOut`` or
    ///   ``HeraldError/Code/cancelled`` while waiting.
    @discardableResult
    public func postAcknowledged(
        _ name: String,
        payload: [UInt8],
        retain: Bool = false
    ) async throws(HeraldError) -> UInt64 {
        try Self.checkPost(name, payloadSize: payload.count, maxPayload: maxPayload)
        let reply = try await connection.request(.acknowledgement, "POST to \(name)") { id in
            .post(Frame.Post(request: id, name: name, payload: payload, retain: retain))
        }
        guard case .sequence(let sequence) = reply else { preconditionFailure("POST answered with \(reply)") }
        return sequence
    }

    /// Posts a typed message to `Message.name`, encoded with JSONEncoder (sorted keys).
    ///
    /// - Throws: as ``post(_:payload:retain:)``, and ``HeraldError/Code/encodingFailed`` when the message does not
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
    /// - Throws: why the connection ended, if it has (posts not yet written when it ended are lost).
    public func waitUntilWritten() async throws(HeraldError) {
        await connection.drainOutput()
        if let reason = connection.closedReason { throw reason }
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

    // MARK: Observing

    /// Subscribes to the names matching `pattern`.
    ///
    /// Returns only after the daemon's `ACK`: after this returns, the subscription is live, and every post the daemon
    /// processes from then on (from any connection) is delivered. Retained values of matching names come first,
    /// flagged ``HeraldNotification/isRetained``, then live posts, with no gap and no duplicate between them.
    ///
    /// - Parameters:
    ///   - pattern: a pattern (Protocols/wire.md): `session.*`, `build.**`, `**`.
    ///   - bufferingPolicy: how many notifications wait for a slow consumer; bounded by default. Losses are
    ///     reported in the stream by a `herald.dropped` notice.
    ///   - overflow: what the daemon does when this connection cannot keep up: drop the oldest (the default),
    ///     keep the newest per name (`.coalesce`), or disconnect. The connection uses the strictest policy of its
    ///     subscriptions.
    /// - Returns: the notifications. Cancelling the consuming task, or dropping the sequence, unsubscribes.
    /// - Throws: ``HeraldError/Code/invalidPattern`` before anything is sent; ``HeraldError/Code/timedOut``,
    ///   ``HeraldError/Code/cancelled`` (nothing stays subscribed), or why the connection ended.
    public func notifications(
        matching pattern: String,
        bufferingPolicy: BufferingPolicy = .default,
        overflow: OverflowPolicy = .dropOldest
    ) async throws(HeraldError) -> HeraldNotifications {
        try await notifications(matching: [pattern], bufferingPolicy: bufferingPolicy, overflow: overflow)
    }

    /// Subscribes to the names matching any of `patterns`, in one stream: every post once, in the order the daemon
    /// sent them.
    ///
    /// ```swift
    /// for await note in try await herald.notifications(matching: ["session.locked", "session.unlocked"]) {
    ///     away = note.name == "session.locked"  // the last one wins, as it happened
    /// }
    /// ```
    ///
    /// One loop over several names sees them in the order they were posted, which separate streams, each consumed by
    /// a task of its own, cannot promise: a lock and an unlock in quick succession could reach two loops in either
    /// order. A post whose name matches several of the patterns comes once.
    ///
    /// Each pattern is a subscription of the connection (it counts against ``maxSubscriptions``), acknowledged in
    /// turn; this returns once every one is live. Retained values come pattern by pattern, each pattern's before its
    /// live posts, so those of a later pattern may follow live posts that an earlier pattern already delivered; a
    /// retained value that an earlier pattern delivered is not delivered again. Everything else is as for
    /// the single-pattern form: one buffer, one loss accounting, one end.
    ///
    /// - Parameters:
    ///   - patterns: one or more patterns (Protocols/wire.md); a pattern given twice counts once.
    ///   - bufferingPolicy: how many notifications wait for a slow consumer; bounded by default.
    ///   - overflow: what the daemon does when this connection cannot keep up (see the single-pattern form).
    /// - Returns: the notifications. Cancelling the consuming task, or dropping the sequence, unsubscribes every
    ///   pattern.
    /// - Throws: ``HeraldError/Code/invalidPattern`` for an empty list or a bad pattern, and
    ///   ``HeraldError/Code/tooManySubscriptions`` when the patterns do not all fit, before anything is sent;
    ///   ``HeraldError/Code/timedOut``, ``HeraldError/Code/cancelled`` (nothing stays subscribed), or why the
    ///   connection ended.
    public func notifications(
        matching patterns: [String],
        bufferingPolicy: BufferingPolicy = .default,
        overflow: OverflowPolicy = .dropOldest
    ) async throws(HeraldError) -> HeraldNotifications {
        guard !patterns.isEmpty else {
            throw HeraldError(.invalidPattern, "no pattern to subscribe to: give at least one")
        }
        var parsed: [HeraldWire.Pattern] = []
        var seen: Set<String> = []
        for pattern in patterns where seen.insert(pattern).inserted {
            do {
                parsed.append(try HeraldWire.Pattern(pattern))
            } catch {
                throw HeraldError(.invalidPattern, error.reason)
            }
        }
        let (stream, consumed) = try await connection.subscribe(
            parsed,
            policy: bufferingPolicy,
            overflow: overflow.wire
        )
        return HeraldNotifications(buffer: stream, consumed: consumed, owner: self)
    }

    /// Monitors every post of the session, read-only (`MONITOR`): only the daemon's own user may, not even root.
    ///
    /// After this the connection may not post; use a separate ``Herald`` to post.
    /// - Throws: ``HeraldError/Code/daemonError`` with the daemon's `PERMISSION_DENIED` for another user (the
    ///   connection ends), ``HeraldError/Code/timedOut``, or why the connection ended.
    public func monitor(bufferingPolicy: BufferingPolicy = .default) async throws(HeraldError) -> HeraldNotifications {
        let (stream, consumed) = try await connection.subscribe(
            [try! HeraldWire.Pattern("**")],
            policy: bufferingPolicy,
            monitor: true
        )
        return HeraldNotifications(buffer: stream, consumed: consumed, owner: self)
    }

    /// The names the daemon knows: those with a retained value or an exact subscription, sorted (`NAMES`).
    public func names() async throws(HeraldError) -> [String] {
        let reply = try await connection.request(.names, "NAMES") { id in .names(Frame.Names(request: id)) }
        guard case .names(let names) = reply else { preconditionFailure("NAMES answered with \(reply)") }
        return names
    }

    /// Subscribes to typed messages posted to `Message.name`; see ``notifications(matching:bufferingPolicy:)``.
    ///
    /// - Returns: the messages; payloads that do not decode as `Message` are skipped, and so are notices.
    /// - Throws: ``HeraldError/Code/invalidName`` when `Message.name` is not a name, and as
    ///   ``notifications(matching:bufferingPolicy:)``.
    public func messages<Message: HeraldMessage>(
        of type: Message.Type,
        bufferingPolicy: BufferingPolicy = .default
    ) async throws(HeraldError) -> HeraldMessages<Message> {
        try Self.validate(name: Message.name)
        let notifications = try await notifications(matching: Message.name, bufferingPolicy: bufferingPolicy)
        return HeraldMessages(notifications: notifications, logger: connection.options.logger)
    }

    /// Reads the retained value of `name` (`GET`).
    ///
    /// - Returns: the retained notification, flagged ``HeraldNotification/isRetained``, or nil when the name has none.
    /// - Throws: ``HeraldError/Code/invalidName`` before anything is sent; ``HeraldError/Code/timedOut``,
    ///   ``HeraldError/Code/cancelled``, or why the connection ended.
    public func retainedValue(of name: String) async throws(HeraldError) -> HeraldNotification? {
        try Self.validate(name: name)
        let reply = try await connection.request(.get, "GET \(name)") { id in .get(Frame.Get(request: id, name: name)) }
        guard case .value(let notification) = reply else { preconditionFailure("GET answered with \(reply)") }
        return notification
    }

    /// Reads the daemon's counters (`STATUS`).
    ///
    /// - Throws: ``HeraldError/Code/timedOut``, ``HeraldError/Code/cancelled``, or why the connection ended.
    public func status() async throws(HeraldError) -> HeraldStatus {
        let reply = try await connection.request(.status, "STATUS") { id in .status(Frame.Status(request: id)) }
        guard case .status(let status) = reply else { preconditionFailure("STATUS answered with \(reply)") }
        return status
    }

    // MARK: Closing

    /// Sends `BYE`, ends every stream, closes the socket, and waits for the reader thread to end.
    ///
    /// Idempotent. After it returns, ``disconnectReason`` is set and every operation throws it.
    public func close() async {
        closed.store(true, ordering: .releasing)
        let task = supervisor.withLock { $0 }
        task?.cancel()
        await task?.value
        await connection.close()
    }

    // MARK: Checks

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
