import HeraldBroker
import HeraldPosix

#if canImport(Glibc)
import Glibc
#endif

/// A turn's output in batches of one system call each, with the loop's ``SendBatcher`` (see there for why).
extension Daemon {
    /// Writes the connections of `ids`, each listed once: in batches of one system call when there is a
    /// ``SendBatcher`` and more than one connection, else with each connection's own sends.
    mutating func flush(_ ids: [ConnectionID]) {
        // The turn's state records go to the log before anything of the turn is sent (Daemon+State).
        if broker.hasStateToWrite { writeState() }
        var start = 0
        // The writer is taken out while it is used (nothing it calls needs it: single connections get their own
        // sends), and put back unless a batch failed: then the rest go one by one, from now on.
        if ids.count > 1, var writer = loop.sendBatcher.take() {
            var working = true
            while working && ids.count - start > 1 {
                let end = min(ids.count, start + writer.capacity)
                working = flushBatch(ids[start..<end], with: &writer)
                start = end
            }
            if working { loop.sendBatcher = consume writer }
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
    private mutating func flushBatch(_ ids: ArraySlice<ConnectionID>, with writer: inout SendBatcher) -> Bool {
        writer.removeAll()
        for id in ids {
            let fd = Int32(id.rawValue)
            guard channels[Int(fd)] != nil else { continue }
            let base = writer.nextVectors
            var count = 0
            var offered = 0
            broker.pendingOutput(for: id, maxChunks: SendBatcher.rangesPerSend, maxBytes: Self.writeBytes) { chunk in
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
                writesDone(send.fd, socketFull: true)
            case .wroteAll:
                // More may be queued than one send offers: the broker then asks for another write.
                writesDone(send.fd, socketFull: false)
            case .failed:
                closeChannel(send.fd, reason: "write failed: \(failures[send.fd]!)")
            }
        }
        for index in 0..<writer.idleCount { writesDone(writer.idle[index], socketFull: false) }
        return submitted
    }
}
