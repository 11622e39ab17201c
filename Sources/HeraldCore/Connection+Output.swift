import HeraldPosix
import HeraldWire

extension Connection {
    /// What became of a frame offered to the outgoing buffer.
    private enum Queued {
        /// The connection is closed.
        case closed
        /// A post that does not fit: wait for room.
        case full
        /// In the buffer, behind a writer that will write it.
        case queued
        /// In the buffer, and the caller is its writer now: it writes at once when the frame is lone (see
        /// ``WriterState/isLone(at:)``), else hands the writing to the reader thread.
        case write(lone: Bool)
    }

    /// Queues a post, waiting while the outgoing buffer is full; in the caller's isolation, as
    /// ``Herald/post(_:payload:retain:)``.
    ///
    /// - Throws: why the connection ended, if it has; `.cancelled` when the task is cancelled while it waits for
    ///   room (the post is not sent, and the connection goes on).
    nonisolated(nonsending) func post(_ frame: Frame) async throws(HeraldError) {
        let size = frame.encodedSize
        while true {
            switch queue(frame, size: size, bounded: true) {
            case .closed: throw closedError
            case .queued: return
            case .write(let lone):
                startWriting(lone: lone)
                return
            case .full:
                await waitForWriter { writer in
                    !writer.isOpen || writer.hasRoom(for: size)
                } enqueue: { writer, waiter in
                    writer.roomWaiters.append(waiter)
                }
                if Task.isCancelled {
                    throw HeraldError(.cancelled, "the task posting was cancelled while it waited for room to post")
                }
            }
        }
    }

    /// Waits until the writer resumes this caller, or `ready` holds, or the connection breaks, or the task is
    /// cancelled: a cancelled waiter takes itself out and returns at once.
    private nonisolated(nonsending) func waitForWriter(
        ready: @escaping (inout WriterState) -> Bool,
        enqueue: @escaping (inout WriterState, WriterState.Waiter) -> Void
    ) async {
        let id = writer.withLock { $0.takeWaiterID() }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = writer.withLock { writer in
                    // Checked under the lock the cancellation handler takes: cancelled before this, the handler
                    // found nothing to resume, so the waiter must not wait; cancelled after, the handler finds it.
                    if Task.isCancelled || writer.isBroken || ready(&writer) { return true }
                    enqueue(&writer, WriterState.Waiter(id: id, continuation: continuation))
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            writer.withLock { $0.removeWaiter(id) }?.resume()
        }
    }

    /// Queues a frame that is not a post (a request, `UNSUBSCRIBE`): never waits for room, since each is bounded by
    /// the requests and subscriptions in flight, and it must keep its place after the posts before it.
    ///
    /// - Throws: why the connection ended, if it has.
    func write(_ frame: Frame) throws(HeraldError) {
        switch queue(frame, size: frame.encodedSize, bounded: false) {
        case .closed: throw closedError
        case .write(let lone): startWriting(lone: lone)
        case .queued, .full: return
        }
    }

    private var closedError: HeraldError {
        closedReason ?? HeraldError(.disconnected, "the connection to heraldd is closed")
    }

    /// Encodes `frame` outside the lock, then copies it in: the lock is held for a copy, not for the encoding, since
    /// the reader thread takes the same lock to write (perf: `Mutex._lockSlow` was 6.5 % of herald-bench fan-out 1,
    /// spent by the publisher's reader thread waiting for posts that encoded under the lock).
    private func queue(_ frame: Frame, size: Int, bounded: Bool) -> Queued {
        if size <= 1024 {
            return withUnsafeTemporaryAllocation(byteCount: size, alignment: 8) { scratch in
                _ = frame.encode(to: scratch)
                return queue(encoded: UnsafeRawBufferPointer(scratch), bounded: bounded)
            }
        }
        return frame.encoded().withUnsafeBytes { queue(encoded: $0, bounded: bounded) }
    }

    private func queue(encoded frame: UnsafeRawBufferPointer, bounded: Bool) -> Queued {
        writer.withLock { writer in
            guard writer.isOpen, !writer.isBroken else { return .closed }
            if bounded, !writer.hasRoom(for: frame.count) { return .full }
            writer.pending.append(contentsOf: frame)
            guard writer.owner == .none else { return .queued }
            writer.owner = .caller
            // The clock only for a frame that finds the buffer idle: a vDSO read, not a syscall.
            return .write(lone: writer.isLone(at: SystemClock.monotonicNanoseconds()))
        }
    }

    /// Writes the buffer the caller now owns the writing of: at once when it is a lone frame, else by the reader
    /// thread.
    ///
    /// A frame is lone when no `send` took output of this connection within ``WriterState/burstGapNanoseconds``
    /// before it (``WriterState/isLone(at:)``): nothing suggests another post is coming, so waiting for one would only
    /// add latency. Otherwise posts are coming faster than one `send` each is worth: the reader thread writes them,
    /// and whatever is added before it gets to it, in one `send`.
    ///
    /// - Parameter lone: what ``WriterState/isLone(at:)`` said when the frame was queued.
    private func startWriting(lone: Bool) {
        let owner = ObjectIdentifier(self)
        if !lone, executor.isDriven(by: owner) {
            writer.withLock { $0.owner = .reader }
            _ = executor.requestOutput(from: owner)
            return
        }
        // Lone, or the reader cannot be woken: written now, without blocking. What the socket does not take, or what
        // others add meanwhile, is the reader's to write; one that cannot be woken looks for it now and then.
        if writeOutput(asCaller: true) != nil { _ = executor.requestOutput(from: owner) }
    }

    /// Writes what the socket takes of the outgoing buffer, without blocking, if this writer owns it: the reader
    /// thread's part, and the part of a caller that queued a lone frame.
    ///
    /// - Parameter asCaller: written by the caller that queued a lone frame: it writes that batch once, and hands
    ///   whatever is left (the socket's refusal, frames queued meanwhile) to the reader thread.
    /// - Returns: nil when this writer is done; otherwise how long, in milliseconds, the reader may wait for room in
    ///   the socket before the daemon counts as not reading (`requestTimeout`, after which the connection is failed),
    ///   or 0 to come back at once.
    @discardableResult
    func writeOutput(asCaller: Bool = false) -> Int32? {
        let me: WriterState.Owner = asCaller ? .caller : .reader
        var resumed: [CheckedContinuation<Void, Never>] = []
        var ending: HeraldError?
        defer {
            for waiter in resumed { waiter.resume() }
            if let ending { fail(ending, local: true) }
        }
        // At most two batches per call, so a connection that posts without pause still reads between them.
        for _ in 0..<2 {
            let next = writer.withLock { writer -> (batch: [UInt8], start: Int)? in
                guard writer.owner == me else { return nil }
                if writer.isBroken {
                    writer.owner = .none
                    resumed += writer.takeWaiters()
                    return nil
                }
                if writer.written == writer.outgoing.count {
                    guard !writer.pending.isEmpty else {
                        let finished = writer.finishWriting()
                        resumed += finished.waiters
                        ending = finished.end
                        return nil
                    }
                    // The last batch is out: take the next, which frees room for the posts waiting.
                    writer.outgoing.removeAll(keepingCapacity: true)
                    swap(&writer.outgoing, &writer.pending)
                    writer.written = 0
                    resumed += writer.roomWaiters.map(\.continuation)
                    writer.roomWaiters = []
                }
                // Shares the storage with the state, which nobody changes while this writer owns it: not copied.
                return (writer.outgoing, writer.written)
            }
            guard let next else { return nil }
            let result = next.batch.withUnsafeBytes { raw in
                Result { () throws(SystemError) in
                    try socket.send(UnsafeRawBufferPointer(rebasing: raw[next.start...]))
                }
            }
            switch result {
            case .success(.processed(let count)):
                let now = SystemClock.monotonicNanoseconds()
                let done = writer.withLock { writer -> Bool in
                    writer.written += count
                    writer.blockedSince = 0
                    writer.lastSentAt = now
                    return writer.written == writer.outgoing.count
                }
                // The socket took part of it: it is full, so wait for room like a refused send.
                guard done else { return blocked(me) }
                if asCaller {
                    let more = writer.withLock { writer in
                        guard writer.pending.isEmpty else {
                            // What others queued meanwhile is the reader's to write, not this caller's.
                            writer.owner = .reader
                            return true
                        }
                        let finished = writer.finishWriting()
                        resumed += finished.waiters
                        ending = finished.end
                        return false
                    }
                    return more ? 0 : nil
                }
            case .success(.wouldBlock):
                return blocked(me)
            case .failure(let error):
                fail(Self.writeFailure(error, timeout: options.requestTimeout))
                return nil
            }
        }
        // More may be queued: the reader looks at its input, then comes back at once.
        return 0
    }

    /// The socket refused output: hands the writing to the reader thread, and says how long it may still wait for
    /// room, or nil once `requestTimeout` has passed without progress (the connection is then failed).
    private func blocked(_ me: WriterState.Owner) -> Int32? {
        let now = SystemClock.monotonicNanoseconds()
        let since = writer.withLock { writer in
            // Only the reader thread waits for room.
            writer.owner = .reader
            if writer.blockedSince == 0 { writer.blockedSince = now }
            return writer.blockedSince
        }
        let timeout = options.requestTimeout
        let limit =
            UInt64(timeout.components.seconds) * 1_000_000_000
            + UInt64(timeout.components.attoseconds / 1_000_000_000)
        guard now - since < limit else {
            fail(HeraldError(.timedOut, "heraldd did not read from the connection for \(timeout); closing it"))
            return nil
        }
        return Int32(clamping: max(1, (limit - (now - since)) / 1_000_000))
    }

    /// Waits until everything queued so far is written to the socket, or the connection has failed, or the task is
    /// cancelled.
    func drainOutput() async {
        await waitForWriter { writer in
            writer.owner == .none
        } enqueue: { writer, waiter in
            writer.drainWaiters.append(waiter)
        }
    }

    /// Queues `BYE` after everything queued, and accepts no more frames.
    ///
    /// - Returns: whether `BYE` was queued (false if the connection was closed already).
    func queueGoodbye() -> Bool {
        let step = writer.withLock { writer -> Queued in
            guard writer.isOpen, !writer.isBroken else { return .closed }
            writer.append(.bye, size: Frame.bye.encodedSize)
            writer.isOpen = false
            guard writer.owner == .none else { return .queued }
            writer.owner = .caller
            return .write(lone: true)
        }
        switch step {
        case .closed: return false
        case .write(let lone): startWriting(lone: lone)
        case .queued, .full: break
        }
        return true
    }

    /// Ends the connection for `reason` once everything queued is written, then `BYE`: what releasing a ``Herald``
    /// does, so posts that returned are not lost with it. At once when nothing is queued; a daemon that stops reading
    /// ends it after `requestTimeout`, as always.
    func endWhenWritten(_ reason: HeraldError) {
        let step = writer.withLock { writer -> Queued in
            guard writer.isOpen, !writer.isBroken else { return .closed }
            writer.append(.bye, size: Frame.bye.encodedSize)
            writer.isOpen = false
            writer.endWhenWritten = reason
            guard writer.owner == .none else { return .queued }
            writer.owner = .caller
            return .write(lone: true)
        }
        switch step {
        case .closed: fail(reason, local: true)
        case .write(let lone): startWriting(lone: lone)
        case .queued, .full: break
        }
    }

    /// Stops all writing for good: the connection failed or was closed. Wakes every waiting writer.
    func breakOutput() {
        let waiters = writer.withLock { writer in
            writer.isBroken = true
            writer.isOpen = false
            writer.pending = []
            return writer.takeWaiters()
        }
        for waiter in waiters { waiter.resume() }
    }
}
