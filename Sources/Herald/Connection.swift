import Foundation
import HeraldPosix
import HeraldWire
import Synchronization

/// One connection to heraldd: the socket, the reader thread's routing state, and the requests in flight.
///
/// The socket is non-blocking once the handshake is done. A dedicated reader thread reads it (see
/// `Connection+Reader.swift`); callers queue whole frames in one outgoing buffer, written by one writer at a time
/// (see `Connection+Output.swift`), so frames never interleave. A daemon that takes no output for `requestTimeout`
/// becomes an error, never a hang.
///
/// The reader thread holds the connection strongly and ends when the socket is shut down, which ``fail(_:)`` does;
/// ``Herald``'s deinit calls it, so the thread never outlives its owner. The descriptor itself is closed only when
/// the connection is freed, after the reader thread has let go of it, so no thread can use a reused number.
final class Connection: Sendable {

    let socket: FileDescriptor
    let socketPath: String
    let welcome: Frame.Welcome
    let options: Herald.Options
    let noticeSender: NoticeSender
    /// The owning ``Herald``'s executor, which the reader thread drives while it reads this connection.
    let executor: ReaderExecutor
    let state = Mutex(ConnectionState())
    /// Given the live subscriptions when the connection is lost, for ``Herald`` to move them to a new connection;
    /// nil when streams should end with the connection.
    let lostHandler = Mutex<(@Sendable ([Subscription]) -> Void)?>(nil)
    /// The outgoing buffer and who writes it (`Connection+Output.swift`).
    let writer = Mutex(WriterState())

    init(
        socket: consuming FileDescriptor,
        socketPath: String,
        welcome: Frame.Welcome,
        options: Herald.Options,
        executor: ReaderExecutor
    ) {
        self.socket = socket
        self.executor = executor
        self.socketPath = socketPath
        self.welcome = welcome
        self.options = options
        // Effective ids: what SO_PEERCRED reports for this process, so notices match the sender of its own posts.
        self.noticeSender = NoticeSender(
            sender: HeraldNotification.Sender(
                pid: Int32(bitPattern: welcome.daemonPID),
                uid: ProcessIdentity.effectiveUID(),
                gid: ProcessIdentity.effectiveGID()
            )
        )
    }

    /// Why the connection ended, or nil while it is open.
    var closedReason: HeraldError? {
        state.withLock { $0.closedReason }
    }

    /// Sends a request built with a fresh id and waits for its answer, at most `requestTimeout`.
    ///
    /// - Parameters:
    ///   - kind: what answers it.
    ///   - what: the request, for the timeout message, e.g. `PING`.
    ///   - frame: builds the frame from the request's id.
    /// - Throws: `.timedOut`, `.cancelled`, or why the connection ended.
    func request(
        _ kind: PendingRequest.Kind,
        _ what: String,
        frame: (UInt32) -> Frame
    ) async throws(HeraldError) -> Reply {
        if Task.isCancelled {
            throw HeraldError(.cancelled, "the task was cancelled before sending \(what)")
        }
        let id = try state.withLock { state throws(HeraldError) in try state.addRequest(kind) }
        do {
            try write(frame(id))
        } catch {
            state.withLock { _ = $0.pending.removeValue(forKey: id) }
            throw error
        }
        return try await reply(to: id, what).get()
    }

    /// Subscribes (`SUBSCRIBE`, or `MONITOR` for a monitor) and waits for the daemon's `ACK`.
    ///
    /// - Returns: the stream; the subscription is live (routed to) from the moment the reader read the `ACK`.
    /// - Throws: `.timedOut`, `.cancelled` (the subscription is then withdrawn), or why the connection ended.
    func subscribe(
        _ pattern: Pattern,
        policy: BufferingPolicy,
        overflow: OverflowPolicy = .dropOldest,
        monitor: Bool = false
    ) async throws(HeraldError) -> (NotificationBuffer, ConsumptionCounter) {
        let continuation = NotificationBuffer(policy: policy)
        let consumed = ConsumptionCounter()
        let subscription = Subscription(
            pattern: pattern,
            continuation: continuation,
            policy: policy,
            overflow: overflow,
            isMonitor: monitor,
            consumed: consumed
        )
        do {
            try await register(subscription)
        } catch {
            continuation.finish()
            throw error
        }
        return (continuation, consumed)
    }

    /// Registers `subscription` on this connection, a new one or one adopted from a lost connection, and waits
    /// for its `ACK`.
    ///
    /// - Throws: `.timedOut`, `.cancelled` (the subscription is then withdrawn), or why the connection ended. On
    ///   failure the subscription is no longer this connection's, unless the connection itself ended and handed it
    ///   on (then the stream stays open).
    func register(_ subscription: Subscription) async throws(HeraldError) {
        // A task cancelled before it asked sends nothing: whether the answer could still win is otherwise a race.
        if Task.isCancelled {
            throw HeraldError(.cancelled, "the task was cancelled before subscribing to \(subscription.pattern.text)")
        }
        let limit = Int(welcome.maxSubscriptions)
        var adopted = subscription
        adopted.isLive = false
        let id = try state.withLock { state throws(HeraldError) in
            // Checked here because the daemon's answer, TOO_MANY_SUBSCRIPTIONS, would end the whole connection.
            guard state.subscriptionsOnTheWire < limit else {
                throw HeraldError(
                    .tooManySubscriptions,
                    "cannot subscribe to \(subscription.pattern.text): this connection already holds the \(limit) "
                        + "subscriptions heraldd allows"
                )
            }
            let id = try state.addRequest(.acknowledgement)
            state.subscriptions[id] = adopted
            state.subscriptionsOnTheWire += 1
            return id
        }
        // Whatever ends the stream (the consumer's task cancelled, the sequence dropped) withdraws the subscription.
        // Weak, so an unconsumed stream does not keep the connection alive through its own registration.
        subscription.continuation.onTermination = { [weak self] _ in
            self?.unsubscribe(id)
        }
        // The consumer, once it has drained an overflowed buffer to half, has the episode's notice put in.
        subscription.consumed.onDrained.withLock { handler in
            handler = { [weak self] in self?.consumerDrained(id) }
        }
        let frame: Frame =
            subscription.isMonitor
            ? .monitor(Frame.Monitor(request: id))
            : .subscribe(
                Frame.Subscribe(subscription: id, pattern: subscription.pattern, overflow: subscription.overflow)
            )
        do {
            try write(frame)
        } catch {
            state.withLock { state in
                state.pending[id] = nil
                if state.subscriptions.removeValue(forKey: id) != nil { state.subscriptionsOnTheWire -= 1 }
            }
            throw error
        }
        let what = subscription.isMonitor ? "MONITOR" : "SUBSCRIBE \(subscription.pattern.text)"
        switch await reply(to: id, what) {
        case .success:
            options.logger?.debug("subscription \(id) to \(subscription.pattern.text) is live")
        case .failure(let error):
            // The SUBSCRIBE is on its way or done; the UNSUBSCRIBE follows it, so the daemon never holds a
            // subscription nobody reads.
            unsubscribe(id)
            throw error
        }
    }

    /// Puts the pending drop notice of subscription `id` in its stream, now that its consumer has made room.
    func consumerDrained(_ id: UInt32) {
        let noticeSender = self.noticeSender
        let buffer = state.withLock { state -> NotificationBuffer? in
            guard state.subscriptions[id] != nil else { return nil }
            state.subscriptions[id]!.reportDrops(noticeSender)
            return state.subscriptions[id]!.continuation
        }
        buffer?.flush()
    }

    /// Withdraws subscription `id`: stops routing to it, and sends `UNSUBSCRIBE` if the connection is open.
    ///
    /// Idempotent: only the call that takes the subscription out sends the frame, because a second `UNSUBSCRIBE`
    /// would be `UNKNOWN_SUBSCRIPTION`, a final error.
    func unsubscribe(_ id: UInt32) {
        let (removed, isOpen) = state.withLock { state in
            (state.subscriptions.removeValue(forKey: id), state.closedReason == nil)
        }
        guard removed != nil, isOpen else { return }
        options.logger?.debug("unsubscribing \(id)")
        // A failed write has already ended the connection, which is all there is to do about it here.
        try? write(Frame.unsubscribe(Frame.Unsubscribe(subscription: id)))
        // Only now: until the UNSUBSCRIBE is written, a SUBSCRIBE from another task could reach the daemon first.
        state.withLock { $0.subscriptionsOnTheWire -= 1 }
    }

    /// Waits for the answer to request `id`, at most `requestTimeout`; cancelling the task withdraws the request.
    private func reply(to id: UInt32, _ what: String) async -> Result<Reply, HeraldError> {
        let timeout = options.requestTimeout
        let timer = Task { [weak self] in
            do {
                try await Task.sleep(for: timeout)
            } catch {
                return
            }
            self?.complete(id, .failure(HeraldError(.timedOut, "heraldd did not answer \(what) within \(timeout)")))
        }
        defer { timer.cancel() }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: ReplyContinuation) in
                if let outcome = state.withLock({ $0.install(continuation, for: id) }) {
                    continuation.resume(returning: outcome)
                }
            }
        } onCancel: {
            complete(id, .failure(HeraldError(.cancelled, "the task waiting for the answer to \(what) was cancelled")))
        }
    }

    private func complete(_ id: UInt32, _ outcome: Result<Reply, HeraldError>) {
        state.withLock { $0.complete(id, outcome) }?.resume()
    }

    /// Ends the connection for `reason`: fails every request in flight, ends every stream (or, when the loss was
    /// not this process's doing and a lost handler is installed, hands the subscriptions to it), and shuts the
    /// socket down so the reader thread sees end of file and ends. The first reason wins; later calls do nothing.
    ///
    /// - Parameter local: whether this process ended the connection (`close()`, release): then streams end.
    func fail(_ reason: HeraldError, local: Bool = false) {
        guard let (subscriptions, resumptions) = state.withLock({ $0.close(reason) }) else { return }
        options.logger?.debug("connection to \(socketPath) ended: \(reason)")
        breakOutput()
        // Shut down, not close: the reader thread may be inside read(2) on this descriptor right now.
        try? socket.shutdown(read: true, write: true)
        let handler = lostHandler.withLock { handler in
            defer { handler = nil }
            return handler
        }
        if !local, Self.reconnectionHelps(reason), let handler {
            handler(subscriptions)
        } else {
            // Outside the lock: finishing a stream runs its onTermination, which takes the lock.
            for subscription in subscriptions {
                subscription.continuation.finish()
            }
        }
        for resumption in resumptions {
            resumption.resume()
        }
    }

    /// Sends `BYE`, ends the connection, and waits for the reader thread to end.
    func close() async {
        // Everything posted before goes out first, then BYE; bounded by `requestTimeout` if the daemon stops
        // reading. Best effort: the daemon treats end of file like BYE.
        if queueGoodbye() { await drainOutput() }
        fail(HeraldError(.disconnected, "the connection was closed by this process"), local: true)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ended = state.withLock { state in
                if state.readerEnded { return true }
                state.readerWaiters.append(continuation)
                return false
            }
            if ended { continuation.resume() }
        }
    }

    /// Whether connecting again can fix what ended a connection: the daemon died, restarted or dropped this slow
    /// connection. A refusal (`PERMISSION_DENIED`, a protocol error) would only happen again, in a loop.
    static func reconnectionHelps(_ reason: HeraldError) -> Bool {
        switch reason.code {
        case .disconnected, .io, .timedOut: true
        case .daemonError: reason.wireCode == WireError.Code.slowConsumer.rawValue
        default: false
        }
    }

    /// The error for a failed write.
    static func writeFailure(_ error: SystemError, timeout: Duration) -> HeraldError {
        switch error.errno {
        case .wouldBlock:
            HeraldError(.timedOut, "heraldd did not read from the connection for \(timeout); closing it")
        case .brokenPipe, .connectionReset, .notConnected:
            HeraldError(.disconnected, "heraldd closed the connection: \(error.errno)")
        default:
            HeraldError(.io, "\(error)")
        }
    }
}
