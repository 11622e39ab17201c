import HeraldDBus
import HeraldPosix

#if canImport(Glibc)
import Glibc
#endif

extension BusCore {
    /// How one connection ended.
    private enum Outcome {
        /// Connecting, authenticating or `Hello` failed.
        case connectFailed(DBusClientError)
        /// The connection was up for `lived` nanoseconds, then was lost.
        case lost(reason: String, lived: UInt64)
        /// The client was closed.
        case closed
    }

    /// The thread's body: connect, serve until the connection is lost, reconnect with backoff, until closed.
    func run() {
        var firstAttempt = true
        var delay = options.minimumReconnectDelay
        reconnecting: while !state.withLock({ $0.closed }) {
            switch connectAndServe(firstAttempt: firstAttempt) {
            case .connectFailed(let error):
                if firstAttempt {
                    let continuation = state.withLock { state in
                        state.closed = true
                        defer { state.connectContinuation = nil }
                        return state.connectContinuation
                    }
                    continuation?.resume(returning: .failure(error))
                    break reconnecting
                }
                options.logger.warning("dbus: cannot reconnect to \(address): \(error); next attempt in \(delay)")
            case .lost(let reason, let lived):
                // A connection that dies at once (a hostile or broken bus) backs off; one that lived resets the delay.
                if lived > 2_000_000_000 { delay = options.minimumReconnectDelay }
                options.logger.warning("dbus: disconnected from \(address): \(reason); reconnecting in \(delay)")
            case .closed:
                break reconnecting
            }
            firstAttempt = false
            sleep(delay)
            delay = min(delay * 2, options.maximumReconnectDelay)
        }
        // Closed: everything that waits ends.
        let (waiting, boxes, connect) = state.withLock { state in
            state.closed = true
            state.connected = false
            defer {
                state.pending = [:]
                state.subscriptions = [:]
                state.connectContinuation = nil
            }
            return (
                state.pending.values.map(\.continuation), Array(state.subscriptions.values), state.connectContinuation
            )
        }
        connect?.resume(returning: .failure(DBusClientError(.closed, "the D-Bus client was closed")))
        for continuation in waiting {
            continuation.resume(returning: .failure(DBusClientError(.closed, "the D-Bus client was closed")))
        }
        for box in boxes { box.continuation.finish() }
        for observer in state.withLock({ state in
            defer { state.connectionObservers = [:] }
            return Array(state.connectionObservers.values)
        }) {
            observer.finish()
        }
    }

    /// Connects, authenticates, says `Hello`, restores the matches and serves the connection until it ends.
    private func connectAndServe(firstAttempt: Bool) -> Outcome {
        do throws(DBusClientError) {
            let socket = try connectSocket()
            let (decoder, early) = try handshake(on: socket, checkingGUID: firstAttempt)
            let connectedAt = SystemClock.monotonicNanoseconds()
            let (continuation, rules) = state.withLock { state in
                state.connected = true
                state.outgoing = []
                state.outgoingDescriptors = []
                defer { state.connectContinuation = nil }
                return (state.connectContinuation, state.subscriptions.values.map(\.rule))
            }
            continuation?.resume(returning: .success(()))
            announceConnection(true)
            if !firstAttempt {
                options.logger.notice("dbus: reconnected to \(address); restoring \(rules.count) matches")
            }
            // Matches are restored before anything else is sent, with no reply wanted: the rules were accepted once.
            var restore: [UInt8] = []
            for rule in rules {
                if var message = try? DBusClient.busMethod("AddMatch", [.string(rule.description)]) {
                    message.flags |= DBusMessage.noReplyExpected
                    message.serial = state.withLock { $0.takeSerial() }
                    if let bytes = try? message.encoded() { restore += bytes }
                }
            }
            let reason = serve(socket, decoder: decoder, early: early, initialOutput: restore)
            socket.close()
            let waiting = state.withLock { state in
                state.connected = false
                state.outgoing = []
                state.outgoingDescriptors = []
                if let reason {
                    state.disconnects += 1
                    state.lastDisconnectReason = reason
                }
                defer { state.pending = [:] }
                return state.pending.values.map(\.continuation)
            }
            for continuation in waiting {
                continuation.resume(returning: .failure(DBusClientError(.disconnected, "the connection was lost")))
            }
            guard let reason else { return .closed }
            announceConnection(false)
            return .lost(reason: reason, lived: SystemClock.monotonicNanoseconds() - connectedAt)
        } catch {
            return .connectFailed(error)
        }
    }

    /// Waits `delay`, or less if the client is closed meanwhile: a wait on the eventfd, not a sleep.
    private func sleep(_ delay: Duration) {
        let milliseconds = Int32(
            clamping: delay.components.seconds * 1000 + delay.components.attoseconds / 1_000_000_000_000_000
        )
        guard !state.withLock({ $0.closed }) else { return }
        var request = pollfd(fd: wakeup.rawValue, events: Int16(POLLIN), revents: 0)
        _ = poll(&request, 1, milliseconds)
        _ = try? wakeup.drain()
        // Calls queued while away cannot be sent: they were refused already; drop their bytes.
        state.withLock { $0.outgoing = [] }
    }

    /// Reads, dispatches and writes until the connection fails (returns why) or the client is closed (returns nil).
    private func serve(
        _ socket: borrowing FileDescriptor,
        decoder initialDecoder: MessageDecoder,
        early: [DBusMessage],
        initialOutput: [UInt8]
    ) -> String? {
        var decoder = initialDecoder
        var output = initialOutput
        var outputStart = 0
        // Descriptors to send with the byte at each offset of `output`, in order.
        var outputDescriptors: [(offset: Int, descriptors: [Int32])] = []
        // Descriptors received and not yet claimed by a message's UNIX_FDS, in arrival order.
        var received: [Int32] = []
        defer { for descriptor in received { FileDescriptor(owning: descriptor).close() } }
        var buffer = [UInt8](repeating: 0, count: 65536)
        do {
            try socket.setNonBlocking(true)
            for message in early { dispatch(Received(message: message, descriptors: []), output: &output) }
            while true {
                let (closed, queued, queuedDescriptors, deadline) = state.withLock { state in
                    defer {
                        state.outgoing = []
                        state.outgoingDescriptors = []
                    }
                    return (
                        state.closed, state.outgoing, state.outgoingDescriptors,
                        state.pending.values.map(\.deadline).min()
                    )
                }
                if closed { return nil }
                for entry in queuedDescriptors {
                    outputDescriptors.append((output.count + entry.offset, entry.descriptors))
                }
                output += queued
                // Write what the socket takes now; the rest waits for POLLOUT. A message with descriptors is sent
                // from its first byte with them attached, and the send before it stops short of that byte.
                while outputStart < output.count {
                    let attached =
                        outputDescriptors.first?.offset == outputStart ? outputDescriptors[0].descriptors : []
                    let end =
                        outputDescriptors.first(where: { $0.offset > outputStart })?.offset ?? output.count
                    let result = try output.withUnsafeBytes { raw in
                        Result { () throws(SystemError) in
                            let bytes = UnsafeRawBufferPointer(rebasing: raw[outputStart..<end])
                            return attached.isEmpty
                                ? try socket.send(bytes) : try socket.send(bytes, passing: attached)
                        }
                    }.get()
                    guard case .processed(let sent) = result else { break }
                    if !attached.isEmpty { outputDescriptors.removeFirst() }
                    outputStart += sent
                }
                if outputStart == output.count {
                    output.removeAll(keepingCapacity: output.capacity <= 65536)
                    outputStart = 0
                }
                let now = SystemClock.monotonicNanoseconds()
                if let deadline, deadline <= now {
                    expireCalls(now: now)
                    continue
                }
                let timeout = deadline.map { Int32(clamping: ($0 - now + 999_999) / 1_000_000) } ?? -1
                let ready = try socket.waitForInput(
                    orOutput: outputStart < output.count,
                    orFrom: wakeup.rawValue,
                    timeoutMilliseconds: timeout
                )
                if ready.other { _ = try? wakeup.drain() }
                guard ready.this else { continue }
                // One read per wakeup keeps the loop fair between reading and writing; poll says when there is more.
                let result = try buffer.withUnsafeMutableBytes { raw in
                    Result { () throws(SystemError) in try socket.receive(into: raw, descriptors: &received) }
                }.get()
                guard case .processed(let count) = result else { continue }
                if count == 0 { return "the bus closed the connection" }
                buffer.withUnsafeBytes { decoder.append(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
                while let message = try decoder.nextMessage() {
                    // The descriptors a message carries arrived with its bytes, in order.
                    let wanted = Int(message.unixFDs)
                    guard wanted <= received.count else {
                        return "a message says it carries \(wanted) descriptors, but \(received.count) came"
                    }
                    let descriptors = Array(received.prefix(wanted))
                    received.removeFirst(wanted)
                    dispatch(Received(message: message, descriptors: descriptors), output: &output)
                }
            }
        } catch let error as DBusError {
            return "the bus sent a message the client refuses (\(error))"
        } catch {
            return "\(error)"
        }
    }

    /// Fails the calls whose deadline has passed.
    private func expireCalls(now: UInt64) {
        let expired = state.withLock { state in
            let serials = state.pending.filter { $0.value.deadline <= now }.map(\.key)
            return serials.compactMap { state.pending.removeValue(forKey: $0) }
        }
        for pending in expired {
            pending.continuation.resume(returning: .failure(DBusClientError(.timedOut, "no reply came in time")))
        }
    }

    /// Routes one message: a reply to its call, a signal to the subscriptions whose rules match it, a call to us to
    /// an answer.
    private func dispatch(_ received: Received, output: inout [UInt8]) {
        let message = received.message
        // Only a reply to a waiting call hands its descriptors on (to the caller); any other message's are closed.
        func closeDescriptors() {
            for descriptor in received.descriptors { FileDescriptor(owning: descriptor).close() }
        }
        if message.type != .methodReturn { closeDescriptors() }
        switch message.type {
        case .methodReturn, .error:
            guard let serial = message.replySerial,
                let pending = state.withLock({ $0.pending.removeValue(forKey: serial) })
            else {
                if message.type == .methodReturn { closeDescriptors() }
                return
            }
            if message.type == .error {
                pending.continuation.resume(returning: .failure(DBusClientError.from(errorReply: message)))
            } else {
                pending.continuation.resume(returning: .success(received))
            }
        case .signal:
            if message.sender == "org.freedesktop.DBus", message.member == "NameAcquired",
                message.interface == "org.freedesktop.DBus", case .string(let name) = message.body.first,
                name.hasPrefix(":")
            {
                state.withLock { $0.uniqueName = name }
            }
            let boxes = state.withLock { state in state.subscriptions.values.filter { $0.rule.matches(message) } }
            for box in boxes { box.deliver(message) }
        case .methodCall:
            guard message.flags & DBusMessage.noReplyExpected == 0 else { return }
            var reply: DBusMessage
            if message.interface == "org.freedesktop.DBus.Peer", message.member == "Ping" {
                reply = DBusMessage.methodReturn(to: message)
            } else {
                reply = DBusMessage.methodReturn(to: message, body: [.string("no such method on this client")])
                reply.type = .error
                reply.fields.insert(
                    (DBusMessage.FieldCode.errorName.rawValue, .string("org.freedesktop.DBus.Error.UnknownMethod")),
                    at: 0
                )
            }
            reply.serial = state.withLock { $0.takeSerial() }
            if let bytes = try? reply.encoded() { output += bytes }
        case .unknown:
            return  // the specification says to ignore unknown types
        }
    }
}
