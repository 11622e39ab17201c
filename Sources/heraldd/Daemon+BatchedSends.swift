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
final class BatchWriter {
    /// The most sends in one batch; a turn with more dirty connections runs several batches.
    static let capacity = 256
    /// The most ranges of one connection's queue in one batched send; the rest goes with that connection's own
    /// sends right after.
    static let rangesPerSend = 16

    var batch: SendBatch
    let vectors: UnsafeMutableBufferPointer<iovec>
    /// Per send of the batch being built: the connection, and the bytes offered.
    var sends: [(fd: Int32, offered: Int)] = []
    /// Connections of the batch with nothing to send: they only need ``Daemon/finishFlush(_:)``.
    var idle: [Int32] = []
    /// What each send came to, reused from batch to batch.
    var outcomes: [Daemon.SendOutcome] = []

    init() throws(SystemError) {
        batch = try SendBatch(capacity: Self.capacity)
        vectors = .allocate(capacity: batch.capacity * Self.rangesPerSend)
        sends.reserveCapacity(batch.capacity)
    }

    deinit {
        vectors.deallocate()
    }

    var capacity: Int { batch.capacity }

    func removeAll() {
        batch.removeAll()
        sends.removeAll(keepingCapacity: true)
        idle.removeAll(keepingCapacity: true)
        outcomes.removeAll(keepingCapacity: true)
    }
}

extension Daemon {
    /// Writes the connections of `ids`, each listed once: in batches of one system call when there is a
    /// ``BatchWriter`` and more than one connection, else with each connection's own sends.
    mutating func flush(_ ids: [ConnectionID]) {
        var start = 0
        // Re-read each time: a batch that fails drops the writer, and the rest go one by one.
        while ids.count - start > 1, let writer = batchWriter {
            let end = min(ids.count, start + writer.capacity)
            flushBatch(ids[start..<end], with: writer)
            start = end
        }
        for id in ids[start...] { flush(Int32(id.rawValue)) }
    }

    /// One batch: gather every connection's first ranges, send them all in one call, account for what each
    /// took, and only then act on it.
    ///
    /// The order matters. Nothing may change the broker while sends are gathered (an urgent flush of one of
    /// them would send the same bytes again), and every connection's `didWrite` is applied before any
    /// follow-up (resuming a paused connection's input can write other connections of this batch).
    private mutating func flushBatch(_ ids: ArraySlice<ConnectionID>, with writer: BatchWriter) {
        writer.removeAll()
        let perSend = BatchWriter.rangesPerSend
        for id in ids {
            let fd = Int32(id.rawValue)
            guard channels[Int(fd)] != nil else { continue }
            let base = writer.vectors.baseAddress! + writer.sends.count * perSend
            var count = 0
            var offered = 0
            broker.pendingOutput(for: id, maxChunks: perSend, maxBytes: Self.writeBytes) { chunk in
                base[count] = iovec(
                    iov_base: UnsafeMutableRawPointer(mutating: chunk.baseAddress),
                    iov_len: chunk.count
                )
                count += 1
                offered += chunk.count
            }
            if count == 0 {
                writer.idle.append(fd)
                continue
            }
            writer.batch.append(descriptor: fd, vector: UnsafeBufferPointer(start: base, count: count))
            writer.sends.append((fd, offered))
        }
        var submitted = true
        do {
            try writer.batch.run()
        } catch {
            // Sends not made report ECANCELED below and go out one by one, as everything does from now on.
            logger.error("\(error); sending to each connection with its own send(2) from now on")
            batchWriter = nil
            submitted = false
        }
        // Accounting first, for all of them.
        for (index, send) in writer.sends.enumerated() {
            let id = ConnectionID(Int(send.fd))
            do {
                switch try writer.batch.result(at: index) {
                case .wouldBlock:
                    writer.outcomes.append(.full)
                case .processed(let written):
                    broker.didWrite(written, to: id)
                    writer.outcomes.append(written < send.offered ? .full : .wroteAll)
                }
            } catch {
                if !submitted && error.errno == Errno(rawValue: ECANCELED) {
                    writer.outcomes.append(.wroteAll)  // nothing was sent: its own sends take it from the start
                } else {
                    writer.outcomes.append(.failed(error))
                }
            }
        }
        // Then what each outcome asks for.
        for (index, send) in writer.sends.enumerated() {
            switch writer.outcomes[index] {
            case .full: finishFlush(send.fd)
            case .wroteAll: flush(send.fd)
            case .failed(let error): closeChannel(send.fd, reason: "write failed: \(error)")
            }
        }
        for fd in writer.idle { finishFlush(fd) }
    }

    /// What a connection's batched send came to.
    enum SendOutcome {
        /// The socket took less than offered, or nothing: the rest waits for it to become writable.
        case full
        /// Everything offered was taken: the queue may hold more, which its own sends write now.
        case wroteAll
        case failed(SystemError)
    }
}
