import HeraldBroker
import HeraldPosix
import HeraldWire

#if canImport(Glibc)
import Glibc
#endif

extension Daemon {
    /// Accepts up to 64 waiting connections; the rest wait for the next turn of the loop.
    mutating func acceptConnections() {
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
                loop.deregister(listener.descriptor.rawValue)
                acceptPaused = true
                loop.schedule(.resumeAccepting, at: SystemClock.monotonicNanoseconds() + Self.acceptPause)
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
                try loop.register(fd, interest: .readable, handler: .connection(fd))
            } catch {
                logger.warning("dropping connection \(fd): \(error)")
                continue
            }
            if Int(fd) >= channels.count {
                channels.append(contentsOf: repeatElement(nil, count: Int(fd) + 1 - channels.count))
                decoders.append(
                    contentsOf: repeatElement(FrameDecoder(role: .daemon), count: Int(fd) + 1 - decoders.count)
                )
            }
            acceptedCount += 1
            let channel = Channel(descriptor: descriptor, credentials: credentials, serial: acceptedCount)
            channels[Int(fd)] = channel
            decoders[Int(fd)] = FrameDecoder(role: .daemon, maxPayload: options.bounds.maxPayload)
            openChannels += 1
            if let plugin = plugins.supervisor.plugin(withPID: credentials.pid) {
                // By the kernel's pid, not by anything the plugin says: being a plugin gives it no other rights.
                logger.info("connection \(fd) is plugin \(plugin) (pid \(credentials.pid))")
            } else {
                logger.debug("connection \(fd) from pid \(credentials.pid) uid \(credentials.uid)")
            }
            let sender = Sender(pid: credentials.pid, uid: credentials.uid, gid: credentials.gid)
            if broker.connectionOpened(ConnectionID(Int(fd)), sender: sender) == .closeAfterFlush {
                logger.warning(
                    "refused pid \(credentials.pid) uid \(credentials.uid): not this daemon's user, or over its limit"
                )
                beginClosing(fd)
            } else {
                awaitHello(channel, fd)
            }
        }
    }

    /// Reads once from a readable connection and hands every whole frame to the broker.
    mutating func readChannel(_ fd: Int32) {
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
            let chunk = UnsafeRawBufferPointer(rebasing: readBuffer[0..<count])
            if decoders[Int(fd)].bufferedByteCount == 0 {
                processFrames(fd, inPlace: chunk)
            } else {
                decoders[Int(fd)].append(chunk)
                processFrames(fd)
            }
        }
    }

    /// Feeds the whole frames of a read to the broker where they lie in the read buffer, while it wants them;
    /// only what is left (a frame's beginning, or frames the broker does not want yet) is copied into the
    /// connection's decoder. Copying every read first was ~100 instructions a post (callgrind, named).
    mutating func processFrames(_ fd: Int32, inPlace chunk: UnsafeRawBufferPointer) {
        guard let channel = channels[Int(fd)] else { return }
        let id = ConnectionID(Int(fd))
        let now = SystemClock.realtimeNanoseconds()
        let scanner = decoders[Int(fd)].scanner
        var offset = 0
        while broker.wantsInput(id) {
            let rest = UnsafeRawBufferPointer(rebasing: chunk[offset...])
            do {
                guard let size = try scanner.frameSize(atStartOf: rest), size <= rest.count else { break }
                let action = try FrameDecoder.withFrame(
                    UnsafeRawBufferPointer(rebasing: rest[..<size]),
                    role: .daemon,
                    maxPayload: options.bounds.maxPayload
                ) { broker.received($0, from: id, now: now) }
                offset += size
                framesThisTurn += 1
                guard continueReading(fd, after: action) else { break }
            } catch {
                protocolViolation(error, on: fd, pid: channel.credentials.pid)
                // Nothing after a violation is read.
                offset = chunk.count
                break
            }
        }
        if offset < chunk.count && channels[Int(fd)] === channel {
            decoders[Int(fd)].append(UnsafeRawBufferPointer(rebasing: chunk[offset...]))
        }
        if channel.awaitingHello { noteHandshake(channel, fd) }
        updateInterest(fd)
    }

    /// Feeds the channel's buffered frames to the broker while it wants them.
    mutating func processFrames(_ fd: Int32) {
        guard let channel = channels[Int(fd)] else { return }
        let id = ConnectionID(Int(fd))
        let now = SystemClock.realtimeNanoseconds()
        while broker.wantsInput(id) {
            do {
                guard let action = try broker.receiveNext(from: &decoders[Int(fd)], on: id, now: now) else { break }
                framesThisTurn += 1
                guard continueReading(fd, after: action) else { break }
            } catch {
                protocolViolation(error, on: fd, pid: channel.credentials.pid)
                break
            }
        }
        if channel.awaitingHello { noteHandshake(channel, fd) }
        updateInterest(fd)
    }

    /// What the loop does after the broker took one of `fd`'s frames.
    ///
    /// - Returns: Whether to go on reading this connection's frames now: not once it is closing.
    private mutating func continueReading(_ fd: Int32, after action: Broker.Action) -> Bool {
        if action == .closeAfterFlush {
            beginClosing(fd)
            return false
        }
        if broker.hasUrgentOutput { flushUrgent() }
        if broker.isOverGlobalBound { relieveGlobalBound() }
        return true
    }

    /// `fd` broke the protocol: the broker queues the `ERROR`, and the connection closes once it is written.
    private mutating func protocolViolation(_ error: WireError, on fd: Int32, pid: Int32) {
        logger.info("connection \(fd) (pid \(pid)) broke the protocol: \(error)")
        _ = broker.inputFailed(error, on: ConnectionID(Int(fd)))
        beginClosing(fd)
    }

    /// Writes the connections whose queues passed half their bound, mid-batch: the kernel's socket buffer
    /// is the first place output should wait, and the queue drops only once that is full too.
    mutating func flushUrgent() {
        broker.takeUrgent(into: &urgentScratch)
        for id in urgentScratch { flush(Int32(id.rawValue)) }
        urgentScratch.removeAll(keepingCapacity: true)
    }

    /// Writes the connection's queued frames until they are gone or the socket is full.
    ///
    /// The broker's queue holds the frames back to back in one buffer, so the bytes usually go out as one
    /// range with one `send`, as Redis sends a subscriber's output buffer; holes left by dropped frames split
    /// them into ranges for `writev`. A write that ends inside a frame is fine: the queue resumes from the
    /// byte it reached.
    mutating func flush(_ fd: Int32) {
        guard let channel = channels[Int(fd)] else { return }
        let id = ConnectionID(Int(fd))
        let iov = writeVector
        writing: while true {
            var count = 0
            var offered = 0
            broker.pendingOutput(for: id, maxChunks: iov.count, maxBytes: Self.writeBytes) { chunk in
                iov[count] = iovec(iov_base: UnsafeMutableRawPointer(mutating: chunk.baseAddress), iov_len: chunk.count)
                count += 1
                offered += chunk.count
            }
            if count == 0 { break }
            do {
                let result =
                    count == 1
                    ? try channel.descriptor.send(UnsafeRawBufferPointer(start: iov[0].iov_base, count: offered))
                    : try channel.descriptor.writev(UnsafeBufferPointer(rebasing: iov[..<count]))
                switch result {
                case .wouldBlock:
                    break writing
                case .processed(let written):
                    broker.didWrite(written, to: id)
                    if written < offered { break writing }
                }
            } catch {
                closeChannel(fd, reason: "write failed: \(error)")
                return
            }
        }
        finishFlush(fd)
    }

    /// What follows a connection's writes: closing it once a closing connection's output is out, resuming input
    /// that was paused for it, or registering the events it now waits for.
    mutating func finishFlush(_ fd: Int32) {
        guard let channel = channels[Int(fd)] else { return }
        let id = ConnectionID(Int(fd))
        let hasOutput = broker.hasOutput(id)
        if !hasOutput && broker.isClosing(id) {
            closeChannel(fd, reason: "closed after its last frame")
            return
        }
        let wantsInput = broker.wantsInput(id)
        if wantsInput && decoders[Int(fd)].bufferedByteCount > 0 && loop.interest(of: fd)?.contains(.readable) == false
        {
            // Reading was paused with frames still buffered: resume them before new input.
            processFrames(fd)
        } else {
            setInterest(fd, readable: wantsInput, writable: hasOutput)
        }
    }

    /// Registers exactly the events the connection needs now: readable while the broker wants its input,
    /// writable while output is queued. Level-triggered, so nothing is missed by asking late.
    mutating func updateInterest(_ fd: Int32) {
        guard channels[Int(fd)] != nil else { return }
        let id = ConnectionID(Int(fd))
        setInterest(fd, readable: broker.wantsInput(id), writable: broker.hasOutput(id))
    }

    /// ``updateInterest(_:)`` for a channel already looked up, with what the broker said.
    private mutating func setInterest(_ fd: Int32, readable: Bool, writable: Bool) {
        var wanted: Epoll.Events = []
        if readable { wanted.insert(.readable) }
        if writable { wanted.insert(.writable) }
        do {
            try loop.setInterest(wanted, for: fd)
        } catch {
            closeChannel(fd, reason: "cannot change its epoll interest: \(error)")
        }
    }

    /// Stops reading the connection; it closes once its output is written, or at the close bound.
    mutating func beginClosing(_ fd: Int32) {
        guard let channel = channels[Int(fd)], !channel.isClosing else { return }
        channel.isClosing = true
        channel.closeTimer = loop.schedule(
            .closeBound(fd: fd, serial: channel.serial),
            at: SystemClock.monotonicNanoseconds() + Self.flushBound
        )
        updateInterest(fd)
    }

    /// Forgets the connection in the broker, then closes its descriptor.
    mutating func closeChannel(_ fd: Int32, reason: String) {
        guard let channel = channels[Int(fd)] else { return }
        loop.deregister(fd)
        broker.connectionClosed(ConnectionID(Int(fd)), monotonicNow: SystemClock.monotonicNanoseconds())
        channels[Int(fd)] = nil
        if channel.awaitingHello { stopAwaitingHello(channel) }
        if let timer = channel.closeTimer.take() { loop.cancel(timer) }
        decoders[Int(fd)] = FrameDecoder(role: .daemon)
        openChannels -= 1
        logger.debug("connection \(fd) (pid \(channel.credentials.pid)) closed: \(reason)")
        // The descriptor closes here, when the last reference to the channel goes.
    }
}
