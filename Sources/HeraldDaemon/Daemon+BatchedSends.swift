import HeraldBroker
import HeraldPosix

#if canImport(Glibc)
import Glibc
#endif

/// The buffers for writing a turn's output with ``SendBatch``: the sends, and the `iovec`s they point at.
///
/// Why batch: at the end of a turn heraldd writes every connection with new output. One `send` each wakes each
/// subscriber in turn, and on a 2-core machine the woken subscriber usually runs on heraldd's CPU and preempts
/// it as that `send` returns, so a turn with 30 connections cost 30 context-switch pairs (perf sched: heraldd
/// preempted 13,209 times in 0.3 s of the 1000-name workload). In one batch the subscribers wake after the
/// last send, and find every socket ready.
///
/// A non-copyable value the daemon lends to ``Daemon/flushBatch(_:with:)`` as `inout`, not a class: every change
/// to a class's stored property is checked for exclusive access at run time, and those checks (`swift_beginAccess`,
/// 4.5 per connection per turn) were 3,600 of the 26,400 instructions of a turn that posts one frame to 10
/// subscribers (callgrind).
struct BatchWriter: ~Copyable {
    /// The most sends in one batch; a turn with more dirty connections runs several batches.
    static let capacity = 256
    /// The most ranges of one connection's queue in one batched send; the rest goes with that connection's own
    /// sends right after.
    static let rangesPerSend = 16

    /// One send of the batch being built, and what it came to.
    struct Send {
        var fd: Int32
        /// The bytes offered.
        var offered: Int
        var outcome: Outcome = .full
    }

    /// What a connection's batched send came to.
    enum Outcome {
        /// The socket took less than offered, or nothing: the rest waits for it to become writable.
        case full
        /// Everything offered was taken: the queue may hold more, which its own sends write now.
        case wroteAll
        /// The send failed: the connection closes.
        case failed
    }

    var batch: SendBatch
    let vectors: UnsafeMutableBufferPointer<iovec>
    /// The sends of the batch being built, `sendCount` of them. Buffers of trivial values rather than arrays:
    /// emptying three arrays each turn was ~500 instructions.
    let sends: UnsafeMutableBufferPointer<Send>
    private(set) var sendCount = 0
    /// Connections of the batch with nothing to send, `idleCount` of them: they only need ``Daemon/finishFlush(_:)``.
    let idle: UnsafeMutableBufferPointer<Int32>
    private(set) var idleCount = 0

    init() throws(SystemError) {
        batch = try SendBatch(capacity: Self.capacity)
        vectors = .allocate(capacity: batch.capacity * Self.rangesPerSend)
        sends = .allocate(capacity: batch.capacity)
        idle = .allocate(capacity: batch.capacity)
    }

    deinit {
        vectors.deallocate()
        sends.deallocate()
        idle.deallocate()
    }

    var capacity: Int { batch.capacity }

    /// Where the `iovec`s of the next send go: room for ``rangesPerSend``.
    var nextVectors: UnsafeMutablePointer<iovec> { vectors.baseAddress! + sendCount * Self.rangesPerSend }

    /// Adds a send of `count` ranges at ``nextVectors`` to `fd`.
    mutating func appendSend(to fd: Int32, ranges count: Int, offered: Int) {
        batch.append(descriptor: fd, vector: UnsafeBufferPointer(start: nextVectors, count: count))
        sends.initializeElement(at: sendCount, to: Send(fd: fd, offered: offered))
        sendCount += 1
    }

    mutating func appendIdle(_ fd: Int32) {
        idle.initializeElement(at: idleCount, to: fd)
        idleCount += 1
    }

    /// Forgets the batch's sends (their values are trivial: nothing to deinitialize).
    mutating func removeAll() {
        batch.removeAll()
        sendCount = 0
        idleCount = 0
    }
}

extension Daemon {
    /// Writes the connections of `ids`, each listed once: in batches of one system call when there is a
    /// ``BatchWriter`` and more than one connection, else with each connection's own sends.
    mutating func flush(_ ids: [ConnectionID]) {
        var start = 0
        // The writer is taken out while it is used (nothing it calls needs it: single connections get their own
        // sends), and put back unless a batch failed: then the rest go one by one, from now on.
        if ids.count > 1, var writer = batchWriter.take() {
            var working = true
            while working && ids.count - start > 1 {
                let end = min(ids.count, start + writer.capacity)
                working = flushBatch(ids[start..<end], with: &writer)
                start = end
            }
            if working { batchWriter = consume writer }
        }
        for id in ids[start...] { flush(Int32(id.rawValue)) }
    }

    /// One batch: gather every connection's first ranges, send them all in one call, account for what each
    /// took, and only then act on it.
    ///
    /// The order matters. Nothing may change the broker while sends are gathered (an urgent flush of one of
    /// them would send the same bytes again), and every connection's `didWrite` is applied before any
    /// follow-up (resuming a paused connection's input can write other connections of this batch).
    ///
    /// - Returns: Whether the batch could be submitted; when not, the writer is not to be used again.
    private mutating func flushBatch(_ ids: ArraySlice<ConnectionID>, with writer: inout BatchWriter) -> Bool {
        writer.removeAll()
        for id in ids {
            let fd = Int32(id.rawValue)
            guard channels[Int(fd)] != nil else { continue }
            let base = writer.nextVectors
            var count = 0
            var offered = 0
            broker.pendingOutput(for: id, maxChunks: BatchWriter.rangesPerSend, maxBytes: Self.writeBytes) { chunk in
                base[count] = iovec(
                    iov_base: UnsafeMutableRawPointer(mutating: chunk.baseAddress),
                    iov_len: chunk.count
                )
                count += 1
                offered += chunk.count
            }
            if count == 0 {
                writer.appendIdle(fd)
            } else {
                writer.appendSend(to: fd, ranges: count, offered: offered)
            }
        }
        var submitted = true
        do {
            try writer.batch.run()
        } catch {
            // Sends not made report ECANCELED below and go out one by one, as everything does from now on.
            logger.error("\(error); sending to each connection with its own send(2) from now on")
            submitted = false
        }
        // Why each failed send failed, for its close; empty (and so never allocated) in the common case.
        var failures: [Int32: SystemError] = [:]
        // Accounting first, for all of them.
        for index in 0..<writer.sendCount {
            let send = writer.sends[index]
            do {
                switch try writer.batch.result(at: index) {
                case .wouldBlock:
                    writer.sends[index].outcome = .full
                case .processed(let written):
                    broker.didWrite(written, to: ConnectionID(Int(send.fd)))
                    writer.sends[index].outcome = written < send.offered ? .full : .wroteAll
                }
            } catch {
                // Not sent at all when the batch was not submitted: its own sends take it from the start.
                if !submitted && error.errno == Errno(rawValue: ECANCELED) {
                    writer.sends[index].outcome = .wroteAll
                } else {
                    writer.sends[index].outcome = .failed
                    failures[send.fd] = error
                }
            }
        }
        // Then what each outcome asks for.
        for index in 0..<writer.sendCount {
            let send = writer.sends[index]
            switch send.outcome {
            case .full:
                finishFlush(send.fd)
            case .wroteAll:
                // More may be queued than one send offers; usually not, and then only the follow-up is left.
                if broker.hasOutput(ConnectionID(Int(send.fd))) { flush(send.fd) } else { finishFlush(send.fd) }
            case .failed:
                closeChannel(send.fd, reason: "write failed: \(failures[send.fd]!)")
            }
        }
        for index in 0..<writer.idleCount { finishFlush(writer.idle[index]) }
        return submitted
    }
}
