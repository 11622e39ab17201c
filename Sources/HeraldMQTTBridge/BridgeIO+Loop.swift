import HeraldCore
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
        let input: BridgeInput
        /// The socket as the Herald's reader thread watches it; nil without a Herald.
        var foreign: ForeignDescriptor?
        /// Whether this thread reads the socket (no reader thread of the Herald watches it).
        var readsItself = true
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
                        case .input(let generation, let outcome):
                            if connection?.generation == generation { act(on: outcome, &connection) }
                        case .watchingChanged:
                            updateReading(&connection)
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
                        read(&connection)
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
        let input = BridgeInput(generation: generation, socket: socket, settings: settings, onEvent: onEvent)
        var connection = Connection(generation: generation, socket: socket, settings: settings, input: input)
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
        if let herald {
            // On the reader thread; what only this thread does goes to it as a command. Once the read finds the
            // connection over, the reader stops watching the socket at once: a socket at its end stays readable.
            let foreign = ForeignDescriptor(
                descriptor: socket.descriptor.rawValue,
                onReadable: { [self] in
                    guard let outcome = input.read() else { return }
                    guard outcome.concernsIO else { return }
                    if outcome.ending != nil { herald.stopWatchingForeignDescriptor(socket.descriptor.rawValue) }
                    command(.input(generation: generation, outcome))
                },
                onWatchingChanged: { [self] in command(.watchingChanged) }
            )
            connection.foreign = foreign
            herald.watchForeignDescriptor(foreign)
        }
        var current: Connection? = connection
        watchOutput(&current)
        return current
    }

    /// Reads the socket here exactly while no reader thread of the Herald watches it.
    private func updateReading(_ connection: inout Connection?) {
        guard var current = connection, let herald, let foreign = current.foreign else { return }
        let readsItself = !herald.isWatchingForeignDescriptor(foreign)
        guard readsItself != current.readsItself else { return }
        current.readsItself = readsItself
        connection = current
        setInterest(&connection)
    }

    /// Reads once, and hands the packets of the read to the bridge.
    private func read(_ connection: inout Connection?) {
        guard let current = connection, let outcome = current.input.read() else { return }
        act(on: outcome, &connection)
    }

    /// Acts on what a read found, on this thread or on the Herald's reader thread: CONNACK starts the keep-alive,
    /// PINGRESP answers it, and the connection ends after malformed input, a failed read or end of file.
    private func act(on outcome: BridgeInput.Outcome, _ connection: inout Connection?) {
        guard var current = connection else { return }
        if outcome.connack {
            if let timer = current.connectTimer { box.loop.cancel(timer) }
            current.connectTimer = nil
            if let seconds = outcome.connackKeepAlive {
                current.keepAlive = UInt64(seconds) * 1_000_000_000
                armKeepAlive(&current)
            }
        }
        if outcome.pingresp {
            current.pingSent = nil
            armKeepAlive(&current)
        }
        connection = current
        guard let ending = outcome.ending else { return }
        if let code = outcome.disconnect, let disconnect = try? Packet.disconnect(.init(reasonCode: code)).encode() {
            send(disconnect, generation: current.generation)
        }
        end(&connection, ending)
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
            current.watchesOutput = waiting
            connection = current
            setInterest(&connection)
            return
        }
        connection = current
    }

    /// Watches the socket for input while this thread reads it, and for room while output is pending.
    ///
    /// While the Herald's reader thread reads it, epoll still reports a hang-up or an error here (it always does):
    /// this thread then reads too, under the input's lock, and ends the connection.
    private func setInterest(_ connection: inout Connection?) {
        guard let current = connection else { return }
        var interest: Epoll.Events = current.readsItself ? [.readable, .readHangup] : []
        if current.watchesOutput { interest.insert(.writable) }
        // Fails only for ENOMEM; the stall deadline still ends a connection that cannot be written, and the keep-alive
        // one that cannot be read.
        try? box.loop.setInterest(interest, for: current.socket.descriptor.rawValue)
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
        connection.input.end()
        if let herald, connection.foreign != nil {
            herald.stopWatchingForeignDescriptor(connection.socket.descriptor.rawValue)
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
