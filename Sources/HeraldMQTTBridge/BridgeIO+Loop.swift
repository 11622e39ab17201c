import HeraldMQTT
import HeraldPosix

/// The I/O thread: its event loop, the connection it serves, and the deadlines.
extension BridgeIO {
    /// What a registration or a timer of the loop is.
    enum Source {
        case socket
        case keepAlive
        case connectDeadline
        /// Output has waited for room; checked against ``stallLimit``.
        case stall
        case deadline(Deadline)
    }

    /// Holds the loop, which is not copyable, for the thread that runs it.
    final class LoopBox: @unchecked Sendable {
        var loop: EventLoop<Source>
        init(_ loop: consuming EventLoop<Source>) { self.loop = loop }
    }

    /// How long output may wait for room before the broker counts as not reading.
    static let stallLimit: UInt64 = 10_000_000_000

    /// The connection the thread serves now.
    private struct Connection {
        let generation: Int
        let socket: Socket
        let settings: Settings
        var decoder: PacketDecoder
        /// The Keep Alive in force once CONNACK came (ours, or the broker's Server Keep Alive, §3.2.2.3.14), in
        /// nanoseconds; 0: none.
        var keepAlive: UInt64 = 0
        var pingSent: UInt64?
        var keepAliveTimer: TimerID?
        var connectTimer: TimerID?
        var stallTimer: TimerID?
        var watchesOutput = false
    }

    func serve() {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 8)
        defer { buffer.deallocate() }
        var connection: Connection?
        var closeAsked: Int?
        while true {
            let count: Int
            do {
                count = try box.loop.wait()
            } catch {
                preconditionFailure("the bridge's epoll_wait failed: \(error)")
            }
            for index in 0..<count {
                guard let event = box.loop.event(at: index) else { continue }
                switch event {
                case .wakeup:
                    let commands = shared.withLock { shared in
                        defer { shared.commands = [] }
                        return shared.commands
                    }
                    for command in commands {
                        switch command {
                        case .adopt(let generation, let socket, let settings):
                            // A socket for a connection the bridge gave up meanwhile closes as it is dropped here.
                            guard generation == shared.withLock({ $0.generation }), connection == nil else { continue }
                            connection = adopt(generation, socket, settings)
                            if closeAsked == generation { end(&connection, "closed by the bridge") }
                        case .failed(let generation, let reason):
                            onEvent(.closed(generation: generation, reason))
                        case .close(let generation):
                            if connection?.generation == generation {
                                writePending(&connection)
                                end(&connection, "closed by the bridge")
                            } else {
                                closeAsked = generation
                            }
                        case .schedule(let deadline, let at):
                            box.loop.schedule(.deadline(deadline), at: at)
                        case .output:
                            break
                        case .stop:
                            if var current = connection { drop(&current) }
                            return
                        }
                    }
                case .ready(_, let events):
                    if events.contains(.writable) { writePending(&connection) }
                    if !events.intersection([.readable, .hangup, .error, .readHangup]).isEmpty {
                        read(&connection, into: buffer)
                    }
                case .timer(let source):
                    timerFired(source, &connection)
                case .signal:
                    break
                }
            }
            watchOutput(&connection)
        }
    }

    /// Takes a connected socket: watches it, writes the CONNECT and what the bridge queued meanwhile, and arms the
    /// CONNACK deadline.
    private func adopt(_ generation: Int, _ socket: Socket, _ settings: Settings) -> Connection? {
        var connection = Connection(
            generation: generation,
            socket: socket,
            settings: settings,
            decoder: PacketDecoder(maximumPacketSize: settings.maximumPacketSize)
        )
        do {
            try box.loop.register(socket.descriptor.rawValue, interest: [.readable, .readHangup], handler: .socket)
        } catch {
            onEvent(.closed(generation: generation, "cannot watch the connection: \(error)"))
            return nil
        }
        shared.withLock { shared in
            defer { noteOutput(shared) }
            let queued = shared.pending
            shared.pending = []
            shared.socket = socket
            _ = Self.write(settings.first + queued, to: socket, &shared)
        }
        let deadline = settings.started + UInt64(settings.keepAlive) * 1_000_000_000
        connection.connectTimer = box.loop.schedule(.connectDeadline, at: deadline)
        var current: Connection? = connection
        watchOutput(&current)
        return current
    }

    /// Reads once, and hands the packets of the read to the bridge.
    private func read(_ connection: inout Connection?, into buffer: UnsafeMutableRawBufferPointer) {
        guard var current = connection else { return }
        let count: Int
        do {
            guard let value = try current.socket.descriptor.read(into: buffer).value else { return }
            count = value
        } catch {
            end(&connection, "read failed: \(error)")
            return
        }
        if count == 0 {
            end(&connection, "the broker closed the connection")
            return
        }
        current.decoder.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
        var packets: [Packet] = []
        var malformed: PacketError?
        do {
            while let packet = try current.decoder.next() {
                // PINGRESP is this thread's alone: passed on, it would wake the bridge's loop for nothing.
                guard observe(packet, &current) else { continue }
                // A QoS 0 message past the backlog's bound is dropped here, before it costs the loop anything.
                if current.settings.backlog.admit(packet) { packets.append(packet) }
            }
        } catch {
            malformed = error
        }
        connection = current
        // The packets before a malformed one are sound and are handled: a PUBACK among them counts.
        if !packets.isEmpty { onEvent(.packets(generation: current.generation, packets)) }
        if let malformed {
            // §4.13: a malformed packet is answered with DISCONNECT and its reason code, then the close.
            if let disconnect = try? Packet.disconnect(.init(reasonCode: malformed.code)).encode() {
                send(disconnect, generation: current.generation)
            }
            end(
                &connection,
                "malformed input from the broker, disconnected with \(malformed.code): \(malformed.reason)"
            )
        }
    }

    /// What this thread itself acts on: CONNACK starts the keep-alive, PINGRESP answers it.
    ///
    /// - Returns: whether the bridge's loop is to see the packet too.
    private func observe(_ packet: Packet, _ connection: inout Connection) -> Bool {
        switch packet {
        case .connack(let connack):
            if let timer = connection.connectTimer { box.loop.cancel(timer) }
            connection.connectTimer = nil
            guard !connack.reasonCode.isFailure else { return true }
            let seconds = connack.properties.serverKeepAlive ?? connection.settings.keepAlive
            connection.keepAlive = UInt64(seconds) * 1_000_000_000
            armKeepAlive(&connection)
            return true
        case .pingresp:
            connection.pingSent = nil
            armKeepAlive(&connection)
            return false
        default:
            return true
        }
    }

    /// Arms the keep-alive for its next step: a PINGREQ half a Keep Alive after the last write, or the end of the
    /// wait for PINGRESP.
    private func armKeepAlive(_ connection: inout Connection) {
        if let timer = connection.keepAliveTimer { box.loop.cancel(timer) }
        connection.keepAliveTimer = nil
        guard connection.keepAlive > 0 else { return }
        let at =
            if let pingSent = connection.pingSent {
                pingSent + connection.keepAlive
            } else {
                shared.withLock { $0.lastSent } + connection.keepAlive / 2
            }
        connection.keepAliveTimer = box.loop.schedule(.keepAlive, at: at)
    }

    private func timerFired(_ source: Source, _ connection: inout Connection?) {
        switch source {
        case .deadline(let deadline):
            onEvent(.deadline(deadline))
        case .socket:
            break
        case .connectDeadline:
            guard let current = connection else { return }
            connection?.connectTimer = nil
            end(&connection, "the broker did not answer CONNECT within \(current.settings.keepAlive) seconds")
        case .keepAlive:
            guard var current = connection else { return }
            current.keepAliveTimer = nil
            let now = SystemClock.monotonicNanoseconds()
            if let pingSent = current.pingSent {
                if now >= pingSent + current.keepAlive {
                    end(&connection, "the broker did not answer PINGREQ within \(current.keepAlive / 1_000_000_000) s")
                    return
                }
            } else if now >= shared.withLock({ $0.lastSent }) + current.keepAlive / 2 {
                current.pingSent = now
                send(Self.pingreq, generation: current.generation)
            }
            armKeepAlive(&current)
            connection = current
        case .stall:
            guard var current = connection else { return }
            current.stallTimer = nil
            connection = current
            let (waiting, since) = shared.withLock { (!$0.pending.isEmpty, $0.blockedSince) }
            guard waiting else { return }
            if SystemClock.monotonicNanoseconds() >= since + Self.stallLimit {
                end(&connection, "the broker stopped reading for 10 s")
            } else {
                connection?.stallTimer = box.loop.schedule(.stall, at: since + Self.stallLimit)
            }
        }
    }

    /// Writes what is pending, as far as the socket takes it.
    private func writePending(_ connection: inout Connection?) {
        guard connection != nil else { return }
        shared.withLock { shared in
            defer { noteOutput(shared) }
            guard let socket = shared.socket, !shared.pending.isEmpty, shared.failure == nil else { return }
            let bytes = shared.pending
            shared.pending = []
            _ = Self.write(bytes, to: socket, &shared)
        }
    }

    /// Watches the socket for room exactly while output is pending; ends the connection after a failed write.
    private func watchOutput(_ connection: inout Connection?) {
        guard var current = connection else { return }
        // Nothing pending, no failure, the socket not watched for room: nothing to change, and no lock taken. A
        // write that leaves output pending or fails after this load wakes this thread (`.output`), which looks again.
        if !current.watchesOutput && !outputWaiting.load(ordering: .acquiring) { return }
        let (waiting, failure) = shared.withLock { (!$0.pending.isEmpty, $0.failure) }
        if let failure {
            end(&connection, failure)
            return
        }
        if waiting && current.stallTimer == nil {
            let since = shared.withLock { $0.blockedSince }
            current.stallTimer = box.loop.schedule(.stall, at: since + Self.stallLimit)
        }
        if waiting != current.watchesOutput {
            let interest: Epoll.Events = waiting ? [.readable, .readHangup, .writable] : [.readable, .readHangup]
            // Fails only for ENOMEM; the stall deadline still ends a connection that cannot be written.
            if (try? box.loop.setInterest(interest, for: current.socket.descriptor.rawValue)) != nil {
                current.watchesOutput = waiting
            }
        }
        connection = current
    }

    /// Ends the connection and reports why.
    private func end(_ connection: inout Connection?, _ reason: String) {
        guard var current = connection else { return }
        connection = nil
        drop(&current)
        onEvent(.closed(generation: current.generation, reason))
    }

    /// Forgets the connection's socket (no write reaches it from here on), its timers and registration; the socket
    /// closes as the last reference goes.
    private func drop(_ connection: inout Connection) {
        for timer in [connection.keepAliveTimer, connection.connectTimer, connection.stallTimer] {
            if let timer { box.loop.cancel(timer) }
        }
        box.loop.deregister(connection.socket.descriptor.rawValue)
        shared.withLock { shared in
            defer { noteOutput(shared) }
            if shared.socket === connection.socket {
                shared.socket = nil
                shared.pending = []
            }
            // A connection that ended stops taking output: the bridge starts another with a new generation.
            if shared.generation == connection.generation { shared.failure = shared.failure ?? "closed" }
        }
    }

    private static let pingreq: [UInt8] = (try? Packet.pingreq.encode()) ?? [0xC0, 0x00]
}
