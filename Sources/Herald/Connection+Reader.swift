import Foundation
import HeraldPosix
import HeraldWire

extension Connection {
    /// Starts the reader thread. It holds the connection until the socket reaches end of file or fails.
    func startReader(decoder: FrameDecoder) {
        let thread = Thread { [self] in
            runReader(decoder: decoder)
        }
        thread.name = "herald-reader"
        thread.start()
    }

    /// The reader thread's loop: read whatever is there, decode every whole frame, route the batch under one lock.
    private func runReader(decoder initial: FrameDecoder) {
        var decoder = initial
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 16)
        defer { buffer.deallocate() }
        var frames: [Frame] = []
        var ending: HeraldError?
        while ending == nil {
            let count: Int
            do {
                // The socket is blocking without a receive timeout, so `.wouldBlock` does not happen; if it did,
                // reading again is right.
                guard let read = try socket.read(into: buffer).value else { continue }
                count = read
            } catch {
                ending = Self.readFailure(error)
                break
            }
            guard count > 0 else {
                ending = HeraldError(.disconnected, "heraldd closed the connection")
                break
            }
            decoder.append(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
            frames.removeAll(keepingCapacity: true)
            var violation: HeraldError?
            do {
                while let frame = try decoder.next() {
                    frames.append(frame)
                }
            } catch {
                violation = HeraldError(.protocolError, "heraldd broke the wire protocol: \(error)")
                options.logger?.error("\(violation!)")
            }
            // Frames decoded before a violation are still delivered: they were valid.
            ending = dispatch(frames) ?? violation
        }
        fail(ending!)
        let waiters = state.withLock { state in
            state.readerEnded = true
            defer { state.readerWaiters = [] }
            return state.readerWaiters
        }
        for waiter in waiters {
            waiter.resume()
        }
    }

    /// Routes a batch of frames with one lock, then resumes the callers they answer.
    ///
    /// - Returns: the reason the connection ends, if the batch holds an `ERROR` (every `ERROR` is final in version 1)
    ///   or a frame a daemon must not send.
    private func dispatch(_ frames: [Frame]) -> HeraldError? {
        guard !frames.isEmpty else { return nil }
        var resumptions: [Resumption] = []
        var touched: [NotificationBuffer] = []
        let noticeSender = self.noticeSender
        let ending = state.withLock { state -> HeraldError? in
            // Every buffer that may have received something is flushed once, after the lock: one wake-up per batch.
            defer { touched = state.subscriptions.values.map(\.continuation) }
            var hasUnreportedDrops = false
            defer {
                // A notice that did not fit earlier goes in now if the consumer has made room since.
                if hasUnreportedDrops {
                    for index in state.subscriptions.indices where state.subscriptions.values[index].unreported != nil {
                        state.subscriptions.values[index].reportDrops(noticeSender)
                    }
                }
            }
            for frame in frames {
                switch frame {
                case .notify(let notify) where notify.subscription == 0:
                    // Live: every live subscription whose pattern matches, built once and shared.
                    var notification: HeraldNotification?
                    for index in state.subscriptions.indices {
                        guard state.subscriptions.values[index].isLive,
                            state.subscriptions.values[index].pattern.matches(notify.name)
                        else { continue }
                        if notification == nil { notification = Self.notification(notify) }
                        state.subscriptions.values[index].deliver(notification!, noticeSender: noticeSender)
                        hasUnreportedDrops = hasUnreportedDrops || state.subscriptions.values[index].unreported != nil
                    }
                case .notify(let notify):
                    // Retained: only the subscription or GET it names; one withdrawn meanwhile gets nothing.
                    let id = notify.subscription
                    if state.subscriptions[id] != nil {
                        state.subscriptions[id]!.deliver(Self.notification(notify), noticeSender: noticeSender)
                        hasUnreportedDrops = hasUnreportedDrops || state.subscriptions[id]!.unreported != nil
                    } else if state.pending[id]?.kind == .get {
                        state.pending[id]!.retained = Self.notification(notify)
                    }
                case .ack(let ack):
                    // From here on, live posts are routed to this subscription: the daemon sends every post with a
                    // later sequence number after this ACK, and none before it.
                    state.subscriptions[ack.request]?.isLive = true
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
                    if !report.more,
                        let resumption = state.complete(
                            report.request,
                            .success(.names(state.pending[report.request]!.names))
                        )
                    {
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
                    for index in state.subscriptions.indices where state.subscriptions.values[index].isLive {
                        state.subscriptions.values[index].daemonDropped(drops, noticeSender: noticeSender)
                        hasUnreportedDrops = hasUnreportedDrops || state.subscriptions.values[index].unreported != nil
                    }
                case .error(let error):
                    return Self.daemonError(error)
                default:
                    return HeraldError(.protocolError, "heraldd sent an unexpected \(frame.type) frame")
                }
            }
            return nil
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
            isRetained: notify.retained
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
