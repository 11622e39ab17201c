import HeraldBroker
import HeraldPosix
import HeraldWire

#if canImport(Glibc)
import Glibc
#endif

extension Daemon {
    /// Accepts up to 64 waiting connections; the rest wait for the next turn of the loop.
    func acceptConnections() {
        guard let listener else { return }
        for _ in 0..<64 {
            let accepted: FileDescriptor?
            do {
                accepted = try UnixSocket.accept(listener.descriptor)
            } catch {
                if error.errno == .connectionAborted { continue }
                // EMFILE, ENFILE, ENOBUFS, ENOMEM: stop watching the listener for a moment instead of spinning
                // on a readiness we cannot act on.
                logger.warning("cannot accept: \(error); pausing accepts for 100 ms")
                try? epoll.remove(listener.descriptor.rawValue)
                acceptResumesAt = SystemClock.monotonicNanoseconds() + Self.acceptPause
                return
            }
            guard let descriptor = accepted else { return }
            let fd = descriptor.rawValue
            let credentials: Credentials
            do {
                credentials = try descriptor.peerCredentials()
            } catch {
                logger.warning("dropping a connection whose credentials cannot be read: \(error)")
                continue
            }
            do {
                try epoll.add(fd, events: .readable, data: UInt64(fd))
            } catch {
                logger.warning("dropping connection \(fd): \(error)")
                continue
            }
            if Int(fd) >= channels.count {
                channels.append(contentsOf: repeatElement(nil, count: Int(fd) + 1 - channels.count))
            }
            channels[Int(fd)] = Channel(
                descriptor: descriptor,
                decoder: FrameDecoder(role: .daemon, maxPayload: options.maxPayload),
                credentials: credentials,
                interest: .readable
            )
            openChannels += 1
            logger.debug("connection \(fd) from pid \(credentials.pid) uid \(credentials.uid)")
            let sender = Sender(pid: credentials.pid, uid: credentials.uid, gid: credentials.gid)
            if broker.connectionOpened(ConnectionID(Int(fd)), sender: sender) == .closeAfterFlush {
                logger.warning(
                    "refused pid \(credentials.pid) uid \(credentials.uid): not this daemon's user, or over its limit"
                )
                beginClosing(fd)
            }
        }
    }

    /// Reads once from a readable connection and hands every whole frame to the broker.
    func readChannel(_ fd: Int32) {
        guard let channel = channels[Int(fd)] else { return }
        guard broker.wantsInput(ConnectionID(Int(fd))) else {
            updateInterest(fd)
            return
        }
        let result: IOResult<Int>
        do {
            result = try channel.descriptor.read(into: readBuffer)
        } catch {
            closeChannel(fd, reason: "read failed: \(error)")
            return
        }
        switch result {
        case .wouldBlock:
            return
        case .processed(0):
            closeChannel(fd, reason: "closed by the client")
        case .processed(let count):
            channel.decoder.append(UnsafeRawBufferPointer(rebasing: readBuffer[0..<count]))
            processFrames(fd)
        }
    }

    /// Feeds the channel's buffered frames to the broker while it wants them.
    func processFrames(_ fd: Int32) {
        guard let channel = channels[Int(fd)] else { return }
        let id = ConnectionID(Int(fd))
        let now = SystemClock.realtimeNanoseconds()
        while broker.wantsInput(id) {
            do {
                guard let frame = try channel.decoder.next() else { break }
                if broker.frameReceived(frame, from: id, now: now) == .closeAfterFlush {
                    beginClosing(fd)
                    break
                }
                if broker.hasUrgentOutput { flushUrgent() }
                if broker.updateGlobalBound() {
                    // Over the bound: stop here; the rest of this connection's input waits in its decoder.
                    globalBoundChanged()
                    break
                }
            } catch {
                logger.info("connection \(fd) (pid \(channel.credentials.pid)) broke the protocol: \(error)")
                _ = broker.inputFailed(error, on: id)
                beginClosing(fd)
                break
            }
        }
        updateInterest(fd)
    }

    /// Writes the connections whose queues passed half their bound, mid-batch: the kernel's socket buffer
    /// is the first place output should wait, and the queue drops only once that is full too.
    func flushUrgent() {
        broker.takeUrgent(into: &urgentScratch)
        for id in urgentScratch { flush(Int32(id.rawValue)) }
        urgentScratch.removeAll(keepingCapacity: true)
    }

    /// Writes the connection's queued frames until they are gone or the socket is full.
    ///
    /// The frames are copied into one contiguous buffer and sent with one `send` per 64 KiB, as Redis does: a frame
    /// is ~100 bytes, and the kernel's per-iovec cost for 60 of them outweighed the copy (Benchmarks/README.md).
    /// A write that ends inside a frame is fine: the broker's queue resumes from the byte it reached.
    func flush(_ fd: Int32) {
        guard let channel = channels[Int(fd)] else { return }
        let id = ConnectionID(Int(fd))
        let buffer = writeBuffer
        writing: while true {
            var filled = 0
            broker.pendingOutput(for: id, maxChunks: 1024) { chunk in
                let count = min(buffer.count - filled, chunk.count)
                guard count > 0 else { return }
                UnsafeMutableRawBufferPointer(rebasing: buffer[filled..<filled + count])
                    .copyMemory(from: UnsafeRawBufferPointer(rebasing: chunk[..<(chunk.startIndex + count)]))
                filled += count
            }
            if filled == 0 { break }
            do {
                switch try channel.descriptor.send(UnsafeRawBufferPointer(rebasing: buffer[..<filled])) {
                case .wouldBlock:
                    break writing
                case .processed(let written):
                    broker.didWrite(written, to: id)
                    if written < filled { break writing }
                }
            } catch {
                closeChannel(fd, reason: "write failed: \(error)")
                return
            }
        }
        if broker.isClosing(id) && !broker.hasOutput(id) {
            closeChannel(fd, reason: "closed after its last frame")
            return
        }
        if broker.wantsInput(id) && channel.decoder.bufferedByteCount > 0 && !channel.interest.contains(.readable) {
            // Reading was paused with frames still buffered: resume them before new input.
            processFrames(fd)
        } else {
            updateInterest(fd)
        }
    }

    /// Registers exactly the events the connection needs now: readable while the broker wants its input,
    /// writable while output is queued. Level-triggered, so nothing is missed by asking late.
    func updateInterest(_ fd: Int32) {
        guard let channel = channels[Int(fd)] else { return }
        let id = ConnectionID(Int(fd))
        var wanted: Epoll.Events = []
        if broker.wantsInput(id) { wanted.insert(.readable) }
        if broker.hasOutput(id) { wanted.insert(.writable) }
        guard wanted != channel.interest else { return }
        do {
            try epoll.modify(fd, events: wanted, data: UInt64(fd))
            channel.interest = wanted
        } catch {
            closeChannel(fd, reason: "cannot change its epoll interest: \(error)")
        }
    }

    /// Stops reading the connection; it closes once its output is written, or at the close bound.
    func beginClosing(_ fd: Int32) {
        guard let channel = channels[Int(fd)], channel.closeDeadline == nil else { return }
        channel.closeDeadline = SystemClock.monotonicNanoseconds() + Self.flushBound
        closing.insert(fd)
        updateInterest(fd)
    }

    /// Forgets the connection in the broker, then closes its descriptor.
    func closeChannel(_ fd: Int32, reason: String) {
        guard let channel = channels[Int(fd)] else { return }
        try? epoll.remove(fd)
        broker.connectionClosed(ConnectionID(Int(fd)), monotonicNow: SystemClock.monotonicNanoseconds())
        channels[Int(fd)] = nil
        closing.remove(fd)
        openChannels -= 1
        logger.debug("connection \(fd) (pid \(channel.credentials.pid)) closed: \(reason)")
        // The descriptor closes here, when the last reference to the channel goes.
    }
}
