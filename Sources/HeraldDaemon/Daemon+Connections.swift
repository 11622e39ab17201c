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
            }
            acceptedCount += 1
            let channel = Channel(descriptor: descriptor, credentials: credentials, serial: acceptedCount)
            channels[Int(fd)] = channel
            openChannels += 1
            if let plugin = plugins.supervisor.plugin(withPID: credentials.pid) {
                // By the kernel's pid, not by anything the plugin says: being a plugin gives it no other rights.
                logger.info("connection \(fd) is plugin \(plugin) (pid \(credentials.pid))")
            } else {
                logger.debug("connection \(fd) from pid \(credentials.pid) uid \(credentials.uid)")
            }
            let sender = Sender(credentials)
            let before = actions.count
            broker.connectionOpened(ConnectionID(Int(fd)), sender: sender, into: &actions)
            if actions.count > before {
                logger.warning(
                    "refused pid \(credentials.pid) uid \(credentials.uid): not this daemon's user, or over its limit"
                )
            } else {
                awaitHello(channel, fd)
            }
        }
    }

    /// Reads once from a readable connection and hands the bytes to the broker.
    mutating func readChannel(_ fd: Int32) {
        // A report from before the broker paused the connection's input (its reading stops with this turn's
        // actions) must not read more into its decoder.
        guard let channel = channels[Int(fd)], broker.wantsInput(ConnectionID(Int(fd))) else { return }
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
            framesThisTurn += broker.bytesRead(
                UnsafeRawBufferPointer(rebasing: readBuffer[0..<count]),
                on: ConnectionID(Int(fd)),
                now: SystemClock.realtimeNanoseconds(),
                into: &actions
            )
        }
    }

    /// Carries out the broker's actions in order, including those that carrying them out appends, then empties the
    /// buffer. Called after each event handed to the broker; a call while actions are being carried out returns at
    /// once, as the outer call reaches what was appended.
    mutating func carryOutActions() {
        // Most events leave nothing to do; emptying even an empty buffer of a non-trivial enum is a generic call.
        guard !carryingOut, !actions.isEmpty else { return }
        carryingOut = true
        var index = 0
        while index < actions.count {
            let action = actions[index]
            index += 1
            carryOut(action)
        }
        actions.removeAll(keepingCapacity: true)
        carryingOut = false
    }

    private mutating func carryOut(_ action: BrokerAction) {
        switch action {
        case .write(let id):
            flush(Int32(id.rawValue))
        case .closeAfterFlush(let id):
            beginClosing(Int32(id.rawValue))
        case .close(let id):
            closeChannel(Int32(id.rawValue), reason: "closed after its last frame")
        case .watch(let id, let reading, let writing):
            setInterest(Int32(id.rawValue), readable: reading, writable: writing)
        case .readAgain(let id):
            guard channels[id.rawValue] != nil else { return }
            framesThisTurn += broker.readBuffered(on: id, now: SystemClock.realtimeNanoseconds(), into: &actions)
        case .handshakeEnded(let id):
            if let channel = channels[id.rawValue], channel.awaitingHello { stopAwaitingHello(channel) }
        case .protocolViolation(let id, let error):
            let pid = channels[id.rawValue]?.credentials.pid ?? 0
            logger.info("connection \(id.rawValue) (pid \(pid)) broke the protocol: \(error)")
        case .shedOutput(let dropped, let disconnected):
            noteShedOutput(dropped: dropped, disconnected: disconnected)
        case .pluginRequest(let request):
            answerPluginRequest(request)
        case .subscribed(let pattern):
            subscribed(pattern)
        case .readAnotherRound:
            readsAnotherRound = true
        case .wakeAt(let deadline):
            if let willTimer { loop.cancel(willTimer) }
            willTimer = loop.schedule(.wills, at: deadline)
        }
    }

    /// Writes the connection's queued frames until they are gone or the socket is full.
    ///
    /// The broker's queue holds the frames back to back in one buffer, so the bytes usually go out as one
    /// range with one `send`, as Redis sends a subscriber's output buffer; holes left by dropped frames split
    /// them into ranges for `writev`. A write that ends inside a frame is fine: the queue resumes from the
    /// byte it reached.
    mutating func flush(_ fd: Int32) {
        guard let channel = channels[Int(fd)] else { return }
        if broker.hasStateToWrite { writeState() }
        let id = ConnectionID(Int(fd))
        let iov = writeVector
        var socketFull = false
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
                    socketFull = true
                    break writing
                case .processed(let written):
                    broker.didWrite(written, to: id)
                    if written < offered {
                        socketFull = true
                        break writing
                    }
                }
            } catch {
                closeChannel(fd, reason: "write failed: \(error)")
                return
            }
        }
        writesDone(fd, socketFull: socketFull)
    }

    /// Tells the broker the connection's writes are done for now; it says what follows (write on, close, resume
    /// input, what to watch).
    ///
    /// - Parameter socketFull: Whether the last write found the socket full.
    mutating func writesDone(_ fd: Int32, socketFull: Bool) {
        guard channels[Int(fd)] != nil else { return }
        broker.writesDone(
            on: ConnectionID(Int(fd)),
            socketFull: socketFull,
            now: SystemClock.realtimeNanoseconds(),
            into: &actions
        )
    }

    /// Registers exactly the events the broker asked the connection to be watched for. Level-triggered, so nothing
    /// is missed by asking late.
    private mutating func setInterest(_ fd: Int32, readable: Bool, writable: Bool) {
        guard channels[Int(fd)] != nil else { return }
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
        broker.closingBegan(on: ConnectionID(Int(fd)), into: &actions)
    }

    /// Forgets the connection in the broker, then closes its descriptor.
    mutating func closeChannel(_ fd: Int32, reason: String) {
        guard let channel = channels[Int(fd)] else { return }
        loop.deregister(fd)
        broker.connectionClosed(ConnectionID(Int(fd)), monotonicNow: SystemClock.monotonicNanoseconds())
        channels[Int(fd)] = nil
        if channel.awaitingHello { stopAwaitingHello(channel) }
        if let timer = channel.closeTimer.take() { loop.cancel(timer) }
        openChannels -= 1
        logger.debug("connection \(fd) (pid \(channel.credentials.pid)) closed: \(reason)")
        // The descriptor closes here, when the last reference to the channel goes.
    }
}
