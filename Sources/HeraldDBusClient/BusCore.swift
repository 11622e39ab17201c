import Dispatch
import HeraldDBus
import HeraldPosix
import Synchronization

/// The shared state of a client and its I/O thread.
///
/// Callers (any task) queue encoded messages and wake the thread through an eventfd; the thread alone touches the
/// socket. It blocks in poll(2) on the socket and the eventfd, with a timeout only while a call waits for its reply:
/// with nothing pending and nothing arriving it does not wake at all. Continuations and streams are resumed outside
/// the lock.
final class BusCore: Sendable {
    /// A call waiting for its reply.
    struct Pending {
        var continuation: CheckedContinuation<Result<Received, DBusClientError>, Never>
        var deadline: UInt64
    }

    /// A message and the descriptors that came with it (the receiver owns them).
    struct Received {
        var message: DBusMessage
        var descriptors: [Int32]
    }

    struct State {
        var closed = false
        var connected = false
        var nextSerial: UInt32 = 1
        var outgoing: [UInt8] = []
        /// Descriptors to send with the byte at each offset of `outgoing` (a message's first).
        var outgoingDescriptors: [(offset: Int, descriptors: [Int32])] = []
        /// Whether the bus agreed to pass descriptors (NEGOTIATE_UNIX_FD).
        var descriptorPassing = false
        var pending: [UInt32: Pending] = [:]
        var subscriptions: [UInt64: SubscriptionBox] = [:]
        var nextSubscriptionID: UInt64 = 1
        var uniqueName: String?
        var disconnects = 0
        var lastDisconnectReason: String?
        var connectContinuation: CheckedContinuation<Result<Void, DBusClientError>, Never>?
        /// The streams of ``DBusClient/connectionChanges()``.
        var connectionObservers: [UInt64: AsyncStream<Bool>.Continuation] = [:]

        mutating func takeSerial() -> UInt32 {
            let serial = nextSerial
            nextSerial = nextSerial == UInt32.max ? 1 : nextSerial + 1
            return serial
        }
    }

    let address: BusAddress
    let options: DBusClient.Options
    let wakeup: EventFD
    let state = Mutex(State())
    /// Signalled when the thread has ended, for ``close()``.
    let finished = DispatchSemaphore(value: 0)

    init(address: BusAddress, options: DBusClient.Options) throws(DBusClientError) {
        self.address = address
        self.options = options
        do {
            wakeup = try EventFD()
        } catch {
            throw DBusClientError(.connectionFailed, "cannot create the client's eventfd: \(error)")
        }
    }

    /// Starts the thread and waits until the first connection is up (authenticated and `Hello` answered).
    func start() async throws(DBusClientError) {
        let result = await withCheckedContinuation { continuation in
            state.withLock { $0.connectContinuation = continuation }
            DetachedThread.start(name: "dbus-client") { [self] in
                run()
                finished.signal()
            }
        }
        try result.get()
    }

    /// Queues `bytes` for the thread to write.
    ///
    /// - Throws: ``DBusClientError`` when the client is closed or away (a message queued then could not be sent, and
    ///   waking the thread would only cut its backoff short), or when the bytes waiting to be written would pass
    ///   ``DBusClient/Options/maximumOutgoingBytes`` (the bus is not reading).
    func enqueue(_ bytes: [UInt8]) throws(DBusClientError) {
        try state.withLock { (state) throws(DBusClientError) in
            if state.closed { throw DBusClientError(.closed, "the D-Bus client is closed") }
            guard state.connected else {
                throw DBusClientError(.disconnected, "the bus at \(address) is away; the client is reconnecting")
            }
            guard state.outgoing.count + bytes.count <= options.maximumOutgoingBytes else {
                throw DBusClientError(
                    .tooManyPendingCalls,
                    "\(state.outgoing.count) bytes already wait to be written: the bus is not reading"
                )
            }
            state.outgoing.append(contentsOf: bytes)
        }
        try? wakeup.signal()
    }

    /// Sends `message` and waits for its reply, at most `timeout` nanoseconds.
    func call(
        _ message: DBusMessage,
        passing descriptors: [Int32] = [],
        timeout: UInt64
    ) async -> Result<Received, DBusClientError> {
        var message = message
        message.flags &= ~DBusMessage.noReplyExpected
        if !descriptors.isEmpty {
            guard state.withLock({ $0.descriptorPassing }) else {
                return .failure(DBusClientError(.protocolViolation, "the bus did not agree to pass descriptors"))
            }
            guard descriptors.count <= FileDescriptor.maximumPassedDescriptors else {
                return .failure(DBusClientError(.protocolViolation, "\(descriptors.count) descriptors (at most 253)"))
            }
            message.fields.removeAll { $0.code == DBusMessage.FieldCode.unixFDs.rawValue }
            message.fields.append((DBusMessage.FieldCode.unixFDs.rawValue, .uint32(UInt32(descriptors.count))))
        }
        let serial: UInt32
        do throws(DBusClientError) {
            serial = try state.withLock { (state) throws(DBusClientError) in
                if state.closed { throw DBusClientError(.closed, "the D-Bus client is closed") }
                guard state.connected else {
                    throw DBusClientError(.disconnected, "the bus at \(address) is away; the client is reconnecting")
                }
                guard state.pending.count < options.maximumPendingCalls else {
                    throw DBusClientError(
                        .tooManyPendingCalls,
                        "\(state.pending.count) calls already wait for their replies"
                    )
                }
                return state.takeSerial()
            }
        } catch {
            return .failure(error)
        }
        message.serial = serial
        let bytes: [UInt8]
        do {
            bytes = try message.encoded()
        } catch {
            return .failure(DBusClientError(.protocolViolation, "cannot encode the call: \(error)"))
        }
        let deadline = SystemClock.monotonicNanoseconds() &+ timeout
        return await withCheckedContinuation { continuation in
            let refused: DBusClientError? = state.withLock { state in
                if state.closed { return DBusClientError(.closed, "the D-Bus client is closed") }
                if !state.connected {
                    return DBusClientError(.disconnected, "the bus at \(address) is away; the client is reconnecting")
                }
                if state.outgoing.count + bytes.count > options.maximumOutgoingBytes {
                    return DBusClientError(
                        .tooManyPendingCalls,
                        "\(state.outgoing.count) bytes already wait to be written: the bus is not reading"
                    )
                }
                state.pending[serial] = Pending(continuation: continuation, deadline: deadline)
                if !descriptors.isEmpty {
                    state.outgoingDescriptors.append((state.outgoing.count, descriptors))
                }
                state.outgoing.append(contentsOf: bytes)
                return nil
            }
            if let refused {
                continuation.resume(returning: .failure(refused))
            } else {
                try? wakeup.signal()
            }
        }
    }

    /// Sends a message that wants no reply.
    func send(_ message: DBusMessage) throws(DBusClientError) {
        var message = message
        message.serial = state.withLock { $0.takeSerial() }
        let bytes: [UInt8]
        do {
            bytes = try message.encoded()
        } catch {
            throw DBusClientError(.protocolViolation, "cannot encode the message: \(error)")
        }
        try enqueue(bytes)
    }

    /// Registers a subscription; the caller then sends its AddMatch.
    func addSubscription(_ box: SubscriptionBox) throws(DBusClientError) -> UInt64 {
        try state.withLock { (state) throws(DBusClientError) in
            if state.closed { throw DBusClientError(.closed, "the D-Bus client is closed") }
            let id = state.nextSubscriptionID
            state.nextSubscriptionID += 1
            state.subscriptions[id] = box
            return id
        }
    }

    /// Tells every ``DBusClient/connectionChanges()`` stream that the client is connected now, or not.
    func announceConnection(_ connected: Bool) {
        let observers = state.withLock { Array($0.connectionObservers.values) }
        for observer in observers { observer.yield(connected) }
    }

    /// Removes a subscription and tells the bus to drop its rule.
    func removeSubscription(_ id: UInt64) {
        let removed = state.withLock { state -> SubscriptionBox? in
            let box = state.subscriptions.removeValue(forKey: id)
            return state.closed || !state.connected ? nil : box
        }
        guard let removed else { return }
        if let message = try? DBusClient.busMethod("RemoveMatch", [.string(removed.rule.description)]) {
            var message = message
            message.flags |= DBusMessage.noReplyExpected
            try? send(message)
        }
    }

    /// Ends the thread, fails what waits, finishes the streams; waits for the thread when `wait` is set.
    func close(wait: Bool) {
        let alreadyClosed = state.withLock { state in
            defer { state.closed = true }
            return state.closed
        }
        if alreadyClosed { return }
        try? wakeup.signal()
        if wait { finished.wait() }
    }
}

/// One subscription: its rule, its stream's continuation and how many signals its full buffer dropped.
final class SubscriptionBox: Sendable {
    let rule: MatchRule
    let continuation: AsyncStream<DBusMessage>.Continuation
    let drops = Atomic<Int>(0)

    init(rule: MatchRule, continuation: AsyncStream<DBusMessage>.Continuation) {
        self.rule = rule
        self.continuation = continuation
    }

    func deliver(_ message: DBusMessage) {
        if case .dropped = continuation.yield(message) {
            drops.add(1, ordering: .relaxed)
        }
    }
}
