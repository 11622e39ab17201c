import HeraldPosix
import HeraldWire

/// What a reader keeps between reads of one connection: the frame scanner and the receive buffer.
struct ReadState {
    let scanner: FrameScanner
    var buffer = ReceiveBuffer()

    init(maxPayload: Int) {
        scanner = FrameScanner(maxPayload: maxPayload)
    }
}

extension Connection {
    /// The reader thread's loop, for a connection with a thread of its own: wait for input, running meanwhile the
    /// jobs of the tasks that prefer this thread (``ReaderExecutor``); read whatever is there (``readOnce(_:)``).
    func runReader(maxPayload: Int) {
        var read = ReadState(maxPayload: maxPayload)
        var ending: HeraldError?
        let owner = ObjectIdentifier(self)
        var blockedOutput: Int32?
        while ending == nil {
            do {
                try executor.runJobsAndWait(for: owner, socket: socket, blockedOutput: &blockedOutput) {
                    writeOutput()
                }
            } catch {
                ending = Self.readFailure(error)
                break
            }
            // The socket has input (or end of file, or an error), so this returns at once; if it did not after
            // all, waiting again is right.
            ending = readOnce(&read)
        }
        readerEnded(ending!)
    }

    /// Reads the socket once without blocking, into bytes that the notifications of the read then share
    /// (``ReceiveBuffer``), and routes the whole frames under one lock.
    ///
    /// - Returns: why the connection ends (end of file, a failed read, an `ERROR`, a broken protocol), or nil while
    ///   it goes on, also when there was nothing to read after all.
    func readOnce(_ state: inout ReadState) -> HeraldError? {
        state.buffer.prepareForRead()
        let count: Int
        do {
            guard let read = try socket.read(into: state.buffer.free).value else { return nil }
            count = read
        } catch {
            return Self.readFailure(error)
        }
        guard count > 0 else {
            return HeraldError(.disconnected, "heraldd closed the connection")
        }
        state.buffer.didRead(count)
        // Where the whole frames end: only their length prefixes are read here.
        var violation: HeraldError?
        var whole = 0
        var frameCount = 0
        var partial: Int?
        do throws(WireError) {
            let bytes = state.buffer.unrouted
            while let size = try state.scanner.frameSize(atStartOf: UnsafeRawBufferPointer(rebasing: bytes[whole...])) {
                guard whole + size <= bytes.count else {
                    partial = size
                    break
                }
                whole += size
                frameCount += 1
            }
        } catch {
            violation = HeraldError(.protocolError, "heraldd broke the wire protocol: \(error)")
        }
        var ending = violation
        if whole > 0 {
            let (shared, frames) = state.buffer.take(whole)
            // Frames before a violation are still delivered: they were valid.
            ending = dispatch(shared, frames, count: frameCount, maxPayload: Int(welcome.maxPayload)) ?? violation
        }
        if let partial { state.buffer.expect(frameOf: partial) }
        if let ending, ending.code == .protocolError { options.logger?.error("\(ending)") }
        return ending
    }

    /// The reader stopped reading this connection for `reason`: it fails, whoever waits for its reader to end
    /// (``close()``) resumes, and its executor's jobs go to the StandbyExecutor.
    func readerEnded(_ reason: HeraldError) {
        fail(reason)
        let waiters = state.withLock { state in
            state.readerEnded = true
            defer { state.readerWaiters = [] }
            return state.readerWaiters
        }
        for waiter in waiters {
            waiter.resume()
        }
        executor.detach(ObjectIdentifier(self))
    }

    /// Decodes and routes whole frames with one lock, then wakes the consumers of the streams that received
    /// something and resumes the callers the frames answer.
    ///
    /// A `NOTIFY` is read in place with ``NotifyView`` and its notification points into `frames`; any other frame,
    /// and a `NOTIFY` the view leaves to it, is decoded by ``FrameDecoder``.
    ///
    /// - Parameters:
    ///   - shared: the bytes the notifications point into.
    ///   - range: where in `shared` the frames are: whole frames, back to back.
    ///   - count: how many frames there are.
    /// - Returns: the reason the connection ends, if the frames hold an `ERROR` (every `ERROR` is final in version 1),
    ///   a frame a daemon must not send, or one that breaks the protocol; the frames before it are routed.
    private func dispatch(
        _ shared: NotificationBytes,
        _ range: Range<Int>,
        count: Int,
        maxPayload: Int
    ) -> HeraldError? {
        var resumptions: [Resumption] = []
        var touched: [NotificationBuffer] = []
        var unawaited: [WireError] = []
        let noticeSender = self.noticeSender
        let frames = shared
        // From the start of `shared`, so that frame offsets are offsets into it, which notifications keep.
        let bytes = UnsafeRawBufferPointer(start: shared.base, count: range.upperBound)
        let ending = state.withLock { state -> HeraldError? in
            var hasUnreportedDrops = false
            // Whether live notifications are staged, to be committed before anything else is routed.
            var hasStaged = false
            defer {
                if hasStaged, state.commitStaged(noticeSender) { hasUnreportedDrops = true }
                // A notice that did not fit earlier goes in now if the consumer has made room since.
                if hasUnreportedDrops {
                    state.forEachSubscription { subscription in
                        guard subscription.unreported != nil else { return }
                        subscription.reportDrops(noticeSender)
                        subscription.touched = true
                    }
                }
                // Only the buffers that received something are flushed, once each: one wake-up per batch.
                state.forEachSubscription { subscription in
                    guard subscription.touched else { return }
                    subscription.touched = false
                    touched.append(subscription.continuation)
                }
            }
            state.reserveStaging(count)
            var next = range.lowerBound
            if state.stageLiveRun(in: bytes, from: &next, { HeraldNotification($0, in: frames) }) {
                hasStaged = true
            }
            while next < bytes.count {
                let start = next
                next += 4 + Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: start, as: UInt32.self)))
                if let notify = NotifyView(frameIn: bytes, at: start) {
                    if notify.subscription == 0 {
                        hasStaged = true
                        let name = UnsafeRawBufferPointer(rebasing: bytes[notify.name])
                        if state.deliverLive(named: name, noticeSender, { HeraldNotification(notify, in: frames) }) {
                            hasUnreportedDrops = true
                        }
                        continue
                    }
                    if hasStaged, state.commitStaged(noticeSender) { hasUnreportedDrops = true }
                    hasStaged = false
                    // Kept by a GET's caller or at the head of a stream: it should not keep the whole read.
                    let notification = HeraldNotification(notify, in: frames).detached()
                    if state.deliverRetained(notification, to: notify.subscription, noticeSender) {
                        hasUnreportedDrops = true
                    }
                    continue
                }
                if hasStaged, state.commitStaged(noticeSender) { hasUnreportedDrops = true }
                hasStaged = false
                let frame: Frame
                do {
                    frame = try FrameDecoder.decodeBody(
                        typeByte: bytes[start + 4],
                        flags: bytes[start + 5],
                        body: UnsafeRawBufferPointer(rebasing: bytes[start + 6..<next]),
                        role: .client,
                        maxPayload: maxPayload,
                        version: welcome.version
                    )
                } catch {
                    return HeraldError(.protocolError, "heraldd broke the wire protocol: \(error)")
                }
                switch frame {
                case .notify(let notify) where notify.subscription == 0:
                    // A name the in-place reader left to the decoder (not plain ASCII).
                    hasStaged = true
                    var name = notify.name
                    let delivered = name.withUTF8 { name in
                        state.deliverLive(named: UnsafeRawBufferPointer(name), noticeSender) {
                            Self.notification(notify)
                        }
                    }
                    if delivered { hasUnreportedDrops = true }
                case .notify(let notify):
                    if state.deliverRetained(Self.notification(notify), to: notify.subscription, noticeSender) {
                        hasUnreportedDrops = true
                    }
                case .ack(let ack):
                    // From here on, live posts are routed to this subscription: the daemon sends every post with a
                    // later sequence number after this ACK, and none before it.
                    state.subscriptionAcknowledged(ack.request)
                    guard let entry = state.pending[ack.request] else { continue }
                    let reply: Reply
                    switch entry.kind {
                    case .acknowledgement: reply = .sequence(ack.sequence)
                    case .get: reply = .value(entry.retained)
                    case .status, .names: continue
                    }
                    if let resumption = state.complete(ack.request, .success(reply)) {
                        resumptions.append(resumption)
                    }
                case .statusReport(let report):
                    guard state.pending[report.request]?.kind == .status else { continue }
                    if let resumption = state.complete(report.request, .success(.status(Self.status(report)))) {
                        resumptions.append(resumption)
                    }
                case .namesReport(let report):
                    guard state.pending[report.request]?.kind == .names else { continue }
                    state.pending[report.request]!.names += report.names
                    if let counts = report.counts {
                        state.pending[report.request]!.counts? += counts
                    } else {
                        state.pending[report.request]!.counts = nil
                    }
                    let entry = state.pending[report.request]!
                    let reply = Reply.names(entry.names, counts: entry.counts)
                    if !report.more, let resumption = state.complete(report.request, .success(reply)) {
                        resumptions.append(resumption)
                    }
                case .dropped(let dropped):
                    // Connection-wide: every live subscription may have lost one of them.
                    let drops = DropRange(
                        count: dropped.count,
                        firstSequence: dropped.firstSequence,
                        lastSequence: dropped.lastSequence
                    )
                    options.logger?.debug("heraldd dropped \(drops.count) notifications for this connection")
                    state.forEachSubscription { subscription in
                        guard subscription.isLive else { return }
                        subscription.daemonDropped(drops, noticeSender: noticeSender)
                        subscription.touched = true
                        hasUnreportedDrops = hasUnreportedDrops || subscription.unreported != nil
                    }
                case .error(let error) where error.isRefusal:
                    // Version 2: this one request failed, the connection goes on.
                    let refusal = Self.refusal(error)
                    guard state.pending[error.request] != nil else {
                        unawaited.append(error)
                        continue
                    }
                    // A refused SUBSCRIBE holds nothing on the daemon: withdrawing the stream sends no UNSUBSCRIBE
                    // for it.
                    if state.isSubscriptionID(error.request) { state.refusedSubscriptions.insert(error.request) }
                    if let resumption = state.complete(error.request, .failure(refusal)) {
                        resumptions.append(resumption)
                    }
                case .error(let error):
                    return Self.daemonError(error)
                default:
                    return HeraldError(.protocolError, "heraldd sent an unexpected \(frame.type) frame")
                }
            }
            return nil
        }
        // Counted before any caller resumes: a flush() that returns has seen the refusals of the posts before it.
        for refusal in unawaited {
            // A post's: its request is a quiet post's id, or 0. Any other is the late answer to a request already
            // given up (a later pattern of a subscription whose first was refused), which nobody counts on.
            if refusal.request == 0 || refusal.request >= Self.firstQuietPostID {
                options.refusals.record(refusal, logger: options.logger)
            } else {
                options.logger?.debug("heraldd refused request \(refusal.request), no longer awaited: \(refusal)")
            }
        }
        for buffer in touched {
            buffer.flush()
        }
        for resumption in resumptions {
            resumption.resume()
        }
        return ending
    }

    static func notification(_ notify: Frame.Notify) -> HeraldNotification {
        HeraldNotification(
            name: notify.name,
            payload: notify.payload,
            sequence: notify.sequence,
            timeNanoseconds: notify.time,
            sender: HeraldNotification.Sender(pid: notify.pid, uid: notify.uid, gid: notify.gid),
            isRetained: notify.retained,
            updatesRetainedValue: notify.retain,
            origin: notify.origin.map {
                HeraldNotification.Origin(host: $0.host, daemon: $0.daemon, sequence: $0.sequence)
            }
        )
    }

    /// The error for a version 2 refusal: the one request it answers fails, the connection goes on.
    static func refusal(_ error: WireError) -> HeraldError {
        HeraldError(
            .refused,
            "heraldd refused the request: \(error.code): \(error.reason)",
            wireCode: error.code.rawValue
        )
    }

    static func status(_ report: Frame.StatusReport) -> HeraldStatus {
        HeraldStatus(
            pid: report.pid,
            startTimeNanoseconds: report.startTime,
            connections: Int(report.connections),
            subscriptions: Int(report.subscriptions),
            retained: Int(report.retained),
            posted: report.posted,
            delivered: report.delivered,
            dropped: report.dropped
        )
    }

    /// The error for an `ERROR` frame; `SHUTTING_DOWN` is a disconnection, not a failure of the request.
    static func daemonError(_ error: WireError) -> HeraldError {
        if error.code == .shuttingDown {
            // The daemon's reason already says it is shutting down; don't say it twice.
            return HeraldError(.disconnected, error.reason, wireCode: error.code.rawValue)
        }
        return HeraldError(
            .daemonError,
            "heraldd reported \(error.code): \(error.reason)",
            wireCode: error.code.rawValue
        )
    }

    /// The error for a failed read.
    static func readFailure(_ error: SystemError) -> HeraldError {
        switch error.errno {
        case .connectionReset, .notConnected:
            HeraldError(.disconnected, "heraldd closed the connection: \(error.errno)")
        default:
            HeraldError(.io, "\(error)")
        }
    }
}
