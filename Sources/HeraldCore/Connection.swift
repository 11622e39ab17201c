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
    /// Told when the connection ends, with the subscriptions it held, why, and whether connecting again can help:
    /// ``Herald`` moves them to a new connection or finishes them. Nil when streams should end with the connection.
    let lostHandler = Mutex<LostHandler?>(nil)
    /// The outgoing buffer and who writes it (`Connection+Output.swift`).
    let writer = Mutex(WriterState())
    /// The last quiet post's id, less ``firstQuietPostID``.
    private let quietPosts = Atomic<UInt32>(0)

    /// The first id of the quiet posts' half of the request ids; the requests that are awaited take the lower half.
    static let firstQuietPostID: UInt32 = 0x8000_0000

    /// Whether the daemon speaks version 2: it answers a refusal and goes on, and takes `QUIET` and origins.
    var answersRefusals: Bool { welcome.version >= ProtocolVersion.refusals }

    /// A fresh request id for a `QUIET` post: only a refusal answers it, and an id nobody awaits says so. An atomic
    /// counter, not the state's lock: a post takes no lock but the writer's.
    func quietPostID() -> UInt32 {
        let next = quietPosts.wrappingAdd(1, ordering: .relaxed).newValue & (Self.firstQuietPostID - 1)
        return Self.firstQuietPostID | next
    }

    init(
        socket: consuming FileDescriptor,
        socketPath: String,
        welcome: Frame.Welcome,
        options: Herald.Options,
        executor: ReaderExecutor
    ) {
        self.socket = socket
        self.executor = executor
        executor.resources.connections.add(1, ordering: .relaxed)
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

    /// What ``lostHandler`` is: given the subscriptions, the reason, and whether reconnecting can help.
    typealias LostHandler = @Sendable (_ subscriptions: [Subscription], _ reason: HeraldError, _ retry: Bool) -> Void

    deinit {
        executor.resources.connections.subtract(1, ordering: .relaxed)
    }

    /// Why the connection ended, or nil while it is open.
    var closedReason: HeraldError? {
        state.withLock { $0.closedReason }
    }

    /// Installs the handler told when the connection ends; a connection that has ended already tells it at once
    /// (it held no subscription then: nothing registers on a connection before its handler is installed).
    ///
    /// The reader runs from the moment the connection opens, so the daemon may be gone before the owner gets here:
    /// without this, that loss reached no handler and nothing reconnected.
    func installLostHandler(_ handler: @escaping LostHandler) {
        let ended = lostHandler.withLock { slot -> (HeraldError, Bool)? in
            // Checked under the handler's lock: `fail` sets the reason first, then takes the handler under it.
            if let (reason, local) = state.withLock({ state in state.closedReason.map { ($0, state.closedLocally) } }) {
                return (reason, !local && Self.reconnectionHelps(reason))
            }
            slot = handler
            return nil
        }
        if let (reason, retry) = ended { handler([], reason, retry) }
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

    /// Subscribes to `patterns` in one stream (a `SUBSCRIBE` each, or one `MONITOR` for a monitor) and waits for the
    /// daemon's `ACK`s.
    ///
    /// - Returns: the stream; each pattern is live (routed to) from the moment the reader read its `ACK`.
    /// - Throws: `.timedOut`, `.cancelled` (the subscription is then withdrawn), or why the connection ended.
    func subscribe(
        _ patterns: [Pattern],
        policy: BufferingPolicy,
        overflow: OverflowPolicy = .dropOldest,
        monitor: Bool = false,
        excludingOwnPosts: Bool = false
    ) async throws(HeraldError) -> (NotificationBuffer, ConsumptionCounter) {
        let continuation = NotificationBuffer(policy: policy)
        let consumed = ConsumptionCounter()
        var subscription = Subscription(
            patterns: patterns,
            continuation: continuation,
            policy: policy,
            overflow: overflow,
            isMonitor: monitor,
            consumed: consumed
        )
        subscription.excludesOwnPosts = excludingOwnPosts
        do {
            try await register(subscription)
        } catch {
            // Never handed over: if the connection ended and gave it to a reconnection, finishing it runs the
            // handler that withdraws it there.
            continuation.finish(error)
            throw error
        }
        return (continuation, consumed)
    }

    /// Registers `subscription` on this connection, a new one or one adopted from a lost connection, and waits
    /// for the `ACK` of each of its patterns.
    ///
    /// The patterns' `SUBSCRIBE`s are written one after the other, in order: the daemon processes them in that order,
    /// which is what lets the reader route each post to the stream once
    /// (``Subscription/earlierPatternMatches(_:before:)``).
    ///
    /// - Throws: `.timedOut`, `.cancelled` (the subscription is then withdrawn), or why the connection ended. On
    ///   failure the subscription is no longer this connection's, unless the connection itself ended and handed it
    ///   on (then the stream stays open).
    func register(_ subscription: Subscription) async throws(HeraldError) {
        // A task cancelled before it asked sends nothing: whether the answer could still win is otherwise a race.
        if Task.isCancelled {
            throw HeraldError(.cancelled, "the task was cancelled before subscribing to \(subscription.description)")
        }
        let limit = Int(welcome.maxSubscriptions)
        let count = subscription.patterns.count
        var adopted = subscription
        adopted.livePatterns = 0
        let ids = try state.withLock { state throws(HeraldError) in
            // Checked here because the daemon's answer, TOO_MANY_SUBSCRIPTIONS, would end the whole connection.
            guard state.subscriptionsOnTheWire + count <= limit else {
                let held = state.subscriptionsOnTheWire
                throw HeraldError(
                    .tooManySubscriptions,
                    "cannot subscribe to \(subscription.description): this connection already holds \(held) of the "
                        + "\(limit) subscriptions heraldd allows"
                        + (count > 1 ? ", and these patterns need \(count)" : "")
                )
            }
            var ids: [UInt32] = []
            for _ in 0..<count {
                ids.append(try state.addRequest(.acknowledgement))
            }
            adopted.ids = ids
            state.subscriptions[ids[0]] = adopted
            for (index, id) in ids.enumerated().dropFirst() {
                state.laterPatterns[id] = PatternOfStream(stream: ids[0], index: index)
            }
            state.subscriptionsOnTheWire += count
            return ids
        }
        let key = ids[0]
        // Whatever ends the stream (the consumer's task cancelled, the sequence dropped) withdraws the subscription.
        // Weak, so an unconsumed stream does not keep the connection alive through its own registration.
        let installed = subscription.continuation.installTermination { [weak self] _ in
            self?.unsubscribe(key)
        }
        guard installed else {
            // Ended before it was registered (its consumer went away while the daemon was away): nothing is sent.
            state.withLock { state in
                for id in ids {
                    state.pending[id] = nil
                }
                if state.removeSubscription(key) != nil { state.subscriptionsOnTheWire -= count }
            }
            throw HeraldError(.cancelled, "the stream of \(subscription.description) ended before it was subscribed")
        }
        // The consumer, once it has drained an overflowed buffer to half, has the episode's notice put in.
        subscription.consumed.onDrained.withLock { handler in
            handler = { [weak self] in self?.consumerDrained(key) }
        }
        do {
            for (index, id) in ids.enumerated() {
                let frame: Frame =
                    subscription.isMonitor
                    ? .monitor(Frame.Monitor(request: id))
                    : .subscribe(
                        Frame.Subscribe(
                            subscription: id,
                            pattern: subscription.patterns[index],
                            overflow: subscription.overflow,
                            noLocal: subscription.excludesOwnPosts && answersRefusals
                        )
                    )
                try write(frame)
            }
        } catch {
            // The connection has ended (a failed write ends it), so nothing is unsubscribed on the wire.
            state.withLock { state in
                for id in ids {
                    state.pending[id] = nil
                }
                if state.removeSubscription(key) != nil { state.subscriptionsOnTheWire -= count }
            }
            throw error
        }
        for (index, id) in ids.enumerated() {
            let pattern = subscription.patterns[index].text
            let what = subscription.isMonitor ? "MONITOR" : "SUBSCRIBE \(pattern)"
            switch await reply(to: id, what) {
            case .success:
                options.logger?.debug("subscription \(id) to \(pattern) is live")
            case .failure(let error):
                // The answers not waited for are not wanted: they are ignored when they come.
                state.withLock { state in
                    for later in ids[(index + 1)...] {
                        state.pending[later] = nil
                    }
                }
                // The SUBSCRIBEs are on their way or done; the UNSUBSCRIBEs follow them, so the daemon never holds a
                // subscription nobody reads.
                unsubscribe(key)
                throw error
            }
        }
    }

    /// Puts the pending drop notice of subscription `key` in its stream, now that its consumer has made room.
    func consumerDrained(_ key: UInt32) {
        let noticeSender = self.noticeSender
        let buffer = state.withLock { state -> NotificationBuffer? in
            guard state.subscriptions[key] != nil else { return nil }
            state.subscriptions[key]!.reportDrops(noticeSender)
            return state.subscriptions[key]!.continuation
        }
        buffer?.flush()
    }

    /// Withdraws subscription `key` (the stream under its first pattern's id): stops routing to it, and sends an
    /// `UNSUBSCRIBE` per pattern if the connection is open.
    ///
    /// Idempotent: only the call that takes the subscription out sends the frames, because a second `UNSUBSCRIBE`
    /// would be `UNKNOWN_SUBSCRIPTION`, a final error.
    func unsubscribe(_ key: UInt32) {
        let (removed, isOpen, refused) = state.withLock { state in
            let removed = state.removeSubscription(key)
            var refused: Set<UInt32> = []
            for id in removed?.ids ?? [] where state.refusedSubscriptions.remove(id) != nil { refused.insert(id) }
            return (removed, state.closedReason == nil, refused)
        }
        guard let removed, isOpen else { return }
        options.logger?.debug("unsubscribing \(removed.ids.map(String.init).joined(separator: ", "))")
        for id in removed.ids where !refused.contains(id) {
            // A failed write has already ended the connection, which is all there is to do about it here.
            try? write(Frame.unsubscribe(Frame.Unsubscribe(subscription: id)))
        }
        // Only now: until the UNSUBSCRIBE is written, a SUBSCRIBE from another task could reach the daemon first.
        state.withLock { $0.subscriptionsOnTheWire -= removed.ids.count }
    }

    /// Waits for the answer to request `id`, at most `requestTimeout`; cancelling the task withdraws the request.
    private func reply(to id: UInt32, _ what: String) async -> Result<Reply, HeraldError> {
        let timeout = options.requestTimeout
        // Not a Task.sleep: see RequestDeadlines.
        let timer = RequestDeadlines.shared.schedule(after: timeout) { [weak self] in
            self?.complete(id, .failure(HeraldError(.timedOut, "heraldd did not answer \(what) within \(timeout)")))
        }
        defer { RequestDeadlines.shared.cancel(timer) }
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

    /// Ends the connection for `reason`: fails every request in flight, hands every subscription to the lost
    /// handler (which moves them to a new connection or finishes them) or, without one, ends their streams, and shuts
    /// the socket down so the reader thread sees end of file and ends. The first reason wins; later calls do nothing.
    ///
    /// - Parameter local: whether this process ended the connection (`close()`, release, an abandoned attempt):
    ///   reconnecting does not follow.
    func fail(_ reason: HeraldError, local: Bool = false) {
        let closed = state.withLock { state in
            let closed = state.close(reason)
            if closed != nil { state.closedLocally = local }
            return closed
        }
        guard let (subscriptions, resumptions) = closed else { return }
        options.logger?.debug("connection to \(socketPath) ended: \(reason)")
        breakOutput()
        // Shut down, not close: the reader thread may be inside read(2) on this descriptor right now.
        try? socket.shutdown(read: true, write: true)
        let handler = lostHandler.withLock { handler in
            defer { handler = nil }
            return handler
        }
        if let handler {
            handler(subscriptions, reason, !local && Self.reconnectionHelps(reason))
        } else {
            // Outside the lock: finishing a stream runs its onTermination, which takes the lock.
            for subscription in subscriptions {
                subscription.continuation.finish(reason)
            }
        }
        for resumption in resumptions {
            resumption.resume()
        }
    }

    /// Sends `BYE`, ends the connection, and waits for the reader thread to end.
    ///
    /// - Parameter goodbye: whether to write what is queued and `BYE` first; a connection abandoned by a failed
    ///   reconnect attempt has nothing to say to a daemon that may not be reading.
    func close(goodbye: Bool = true) async {
        // Everything posted before goes out first, then BYE; bounded by `requestTimeout` if the daemon stops
        // reading. Best effort: the daemon treats end of file like BYE.
        if goodbye, queueGoodbye() { await drainOutput() }
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
