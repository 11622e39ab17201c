public import HeraldDBus
public import HeraldPosix

/// A connection to a D-Bus bus: method calls with timeouts, signals as AsyncSequences, and reconnection.
///
/// The client's I/O runs on one thread of its own, which blocks in poll(2) and wakes only when the bus sends
/// something, a caller queues a message, or a pending call's timeout falls due: an idle client with its matches set
/// does not wake. When the bus goes away, pending calls fail with ``DBusClientError/Code/disconnected``, and the client
/// reconnects with backoff, says `Hello` again and restores every subscription's match rule.
///
/// Call ``close()`` when done: the thread ends, pending calls fail with ``DBusClientError/Code/closed`` and every
/// signal sequence finishes. Dropping the last reference closes it too.
public final class DBusClient: Sendable {
    /// What a client may hold and how long it waits.
    public struct Options: Sendable {
        /// How long a call waits for its reply unless the call says otherwise (25 s, as libdbus).
        public var callTimeout: Duration = .seconds(25)
        /// How long connecting, authenticating and `Hello` may take.
        public var connectTimeout: Duration = .seconds(5)
        /// The largest message accepted from the bus; a larger one is refused from its fixed header and the
        /// connection is dropped. At most the specification's 128 MiB.
        public var maximumMessageLength: Int = DBusMessage.maximumLength
        /// How many signals a subscription buffers for a slow consumer before it drops the oldest (and counts them).
        public var signalBufferSize: Int = 256
        /// How many calls may wait for replies at once.
        public var maximumPendingCalls: Int = 4096
        /// How many bytes may wait to be written while the bus does not read; past it, calls and sends fail with
        /// ``DBusClientError/Code/tooManyPendingCalls``.
        public var maximumOutgoingBytes: Int = 16 * 1024 * 1024
        /// The first delay before reconnecting; it doubles on each failure.
        public var minimumReconnectDelay: Duration = .milliseconds(50)
        /// The longest delay between reconnection attempts.
        public var maximumReconnectDelay: Duration = .seconds(5)
        /// Where disconnections and reconnections are logged; off by default.
        public var logger: Logger = .disabled

        /// The defaults.
        public init() {}
    }

    let core: BusCore

    private init(core: BusCore) {
        self.core = core
    }

    deinit {
        core.close(wait: false)
    }

    /// Connects to `address`, authenticates with SASL EXTERNAL as this process's uid and says `Hello`.
    ///
    /// After this returns, the client has its unique name and calls can be made.
    ///
    /// - Throws: ``DBusClientError``: ``DBusClientError/Code/connectionFailed`` when no entry of the address can be
    ///   reached, ``DBusClientError/Code/authenticationFailed`` when the bus refuses.
    public static func connect(
        to address: BusAddress,
        options: Options = Options()
    ) async throws(DBusClientError)
        -> DBusClient
    {
        let core = try BusCore(address: address, options: options)
        try await core.start()
        return DBusClient(core: core)
    }

    /// Connects to the session bus named by `DBUS_SESSION_BUS_ADDRESS` (in `environment`, or the process's).
    ///
    /// - Throws: ``DBusClientError``, with ``DBusClientError/Code/badAddress`` when the variable is unset.
    public static func session(
        environment: [String: String]? = nil,
        options: Options = Options()
    ) async throws(DBusClientError) -> DBusClient {
        let variables = environment ?? Self.processVariables("DBUS_SESSION_BUS_ADDRESS")
        return try await connect(to: try BusAddress.session(environment: variables), options: options)
    }

    /// Connects to the system bus: `DBUS_SYSTEM_BUS_ADDRESS`, or `/run/dbus/system_bus_socket`.
    ///
    /// - Throws: ``DBusClientError``.
    public static func system(
        environment: [String: String]? = nil,
        options: Options = Options()
    ) async throws(DBusClientError) -> DBusClient {
        let variables = environment ?? Self.processVariables("DBUS_SYSTEM_BUS_ADDRESS")
        return try await connect(to: try BusAddress.system(environment: variables), options: options)
    }

    /// The unique name the bus gave this connection (`:1.42`); it changes when the client reconnects.
    public var uniqueName: String? { core.state.withLock { $0.uniqueName } }

    /// Whether the client is connected now (false while it reconnects).
    public var isConnected: Bool { core.state.withLock { $0.connected } }

    /// How many times the connection was lost, and the last reason.
    public var disconnections: (count: Int, lastReason: String?) {
        core.state.withLock { ($0.disconnects, $0.lastDisconnectReason) }
    }

    /// Sends a method call and waits for its reply.
    ///
    /// - Parameters:
    ///   - message: the call; its serial is set by the client.
    ///   - timeout: how long to wait; ``Options/callTimeout`` when nil.
    /// - Returns: the method's return message.
    /// - Throws: ``DBusClientError``: ``DBusClientError/Code/errorReply`` with the error's name when the peer answers
    ///   with an error, ``DBusClientError/Code/timedOut``, ``DBusClientError/Code/disconnected``,
    ///   ``DBusClientError/Code/closed``.
    public func call(_ message: DBusMessage, timeout: Duration? = nil) async throws(DBusClientError) -> DBusMessage {
        let reply = try await call(message, passing: [], timeout: timeout)
        // Descriptors a reply carries belong to the caller of the other form; here nobody would close them.
        for descriptor in reply.descriptors { FileDescriptor(owning: descriptor).close() }
        return reply.message
    }

    /// Sends a method call with descriptors for its `h` values, and waits for its reply and the descriptors it
    /// carries.
    ///
    /// The message's `h` values are indexes into `descriptors`; the client sets its UNIX_FDS field. The descriptors
    /// are sent as they are (not duplicated): keep them open until this returns.
    ///
    /// - Returns: the reply, and the descriptors its `h` values index, which the caller now owns and must close.
    /// - Throws: ``DBusClientError`` as ``call(_:timeout:)``, and ``DBusClientError/Code/protocolViolation`` when the
    ///   bus did not agree to pass descriptors.
    public func call(
        _ message: DBusMessage,
        passing descriptors: [Int32],
        timeout: Duration? = nil
    ) async throws(DBusClientError) -> (message: DBusMessage, descriptors: [Int32]) {
        let duration = timeout ?? core.options.callTimeout
        let nanoseconds =
            UInt64(duration.components.seconds) * 1_000_000_000
            + UInt64(duration.components.attoseconds / 1_000_000_000)
        let received = try await core.call(message, passing: descriptors, timeout: nanoseconds).get()
        return (received.message, received.descriptors)
    }

    /// Calls a method and returns its reply's body.
    ///
    /// - Throws: ``DBusClientError``; ``DBusClientError/Code/protocolViolation`` for an invalid name or path.
    public func call(
        destination: String,
        path: String,
        interface: String,
        member: String,
        _ arguments: [DBusValue] = [],
        timeout: Duration? = nil
    ) async throws(DBusClientError) -> [DBusValue] {
        let message: DBusMessage
        do {
            message = try DBusMessage.methodCall(
                destination: destination,
                path: path,
                interface: interface,
                member: member,
                body: arguments
            )
        } catch {
            throw DBusClientError(.protocolViolation, "cannot build the call to \(interface).\(member): \(error)")
        }
        return try await call(message, timeout: timeout).body
    }

    /// Sends a message without waiting for anything (a signal, or a call flagged NO_REPLY_EXPECTED).
    ///
    /// - Throws: ``DBusClientError`` when it cannot be encoded.
    public func send(_ message: DBusMessage) throws(DBusClientError) {
        try core.send(message)
    }

    /// Subscribes to the signals matching `rule`.
    ///
    /// After this returns, the bus has accepted the rule (`AddMatch` answered) and every matching signal reaches the
    /// sequence, which buffers at most `bufferSize` of them for a slow consumer, dropping the oldest and counting them
    /// in ``DBusSignals/droppedCount``. When the sequence ends (its consumer is cancelled or stops iterating) the rule
    /// is removed from the bus. After a reconnection the rule is restored.
    ///
    /// - Throws: ``DBusClientError`` when the bus refuses the rule or cannot be reached.
    public func signals(matching rule: MatchRule, bufferSize: Int? = nil) async throws(DBusClientError) -> DBusSignals {
        let (stream, continuation) = AsyncStream.makeStream(
            of: DBusMessage.self,
            bufferingPolicy: .bufferingNewest(max(1, bufferSize ?? core.options.signalBufferSize))
        )
        let box = SubscriptionBox(rule: rule, continuation: continuation)
        let id = try core.addSubscription(box)
        continuation.onTermination = { [weak core] _ in core?.removeSubscription(id) }
        do throws(DBusClientError) {
            _ = try await call(try Self.busMethod("AddMatch", [.string(rule.description)]))
        } catch {
            continuation.finish()
            throw error
        }
        return DBusSignals(stream: stream, box: box)
    }

    /// Each time the connection is lost (`false`) or made again (`true`), from now on, until the client is closed.
    ///
    /// The stream keeps the newest 8 changes for a slow consumer. A change is said after it happened: on `true`, the
    /// client has said `Hello` again and restored its matches (re-read what the bus knows then); on `false`, pending
    /// calls have failed and the client is reconnecting with backoff.
    public func connectionChanges() -> AsyncStream<Bool> {
        let (stream, continuation) = AsyncStream.makeStream(of: Bool.self, bufferingPolicy: .bufferingNewest(8))
        let added: UInt64? = core.state.withLock { state in
            if state.closed { return nil }
            let id = state.nextSubscriptionID
            state.nextSubscriptionID += 1
            state.connectionObservers[id] = continuation
            return id
        }
        guard let id = added else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak core] _ in
            _ = core?.state.withLock { $0.connectionObservers.removeValue(forKey: id) }
        }
        return stream
    }

    /// Closes the connection and ends the client's thread; waits until it has ended.
    ///
    /// Pending calls fail with ``DBusClientError/Code/closed`` and every signal sequence finishes.
    public func close() {
        core.close(wait: true)
    }

    /// The process's value of `name`, as an environment dictionary.
    private static func processVariables(_ name: String) -> [String: String] {
        ProcessEnvironment.value(name).map { [name: $0] } ?? [:]
    }

    /// A call to the bus itself (`org.freedesktop.DBus`).
    static func busMethod(_ member: String, _ arguments: [DBusValue]) throws(DBusClientError) -> DBusMessage {
        do {
            return try DBusMessage.methodCall(
                destination: "org.freedesktop.DBus",
                path: "/org/freedesktop/DBus",
                interface: "org.freedesktop.DBus",
                member: member,
                body: arguments
            )
        } catch {
            throw DBusClientError(.protocolViolation, "cannot build \(member): \(error)")
        }
    }
}
