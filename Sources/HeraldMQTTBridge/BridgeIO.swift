import HeraldCore
import HeraldMQTT
import HeraldPosix
import Synchronization

/// The bridge's I/O: one thread running HeraldPosix's ``EventLoop`` for the broker connection and for every deadline
/// the bridge has (the keep-alive, the CONNACK wait, a broker that stops reading, the state's next post, the next
/// reconnect). It wakes only when the broker sends something, the bridge writes more than the socket takes, or a
/// deadline armed for something pending comes due: an idle bridge does not wake at all.
///
/// Neither input nor output goes through this thread while the Herald is connected. The Herald's reader thread, on
/// which the bridge's loop runs, watches the socket along with heraldd's (``Herald/watchForeignDescriptor(_:)``),
/// reads and decodes it there (``BridgeInput``), and the loop writes to the socket itself, non-blocking, handing this
/// thread only what the socket did not take. A QoS 1 window is thus read, handled and answered on one thread, with
/// no hand-off between threads in the bridge (Benchmarks/README.md, issue 26); this thread wakes for a deadline, for
/// output that waits for room, and for the CONNACK and PINGRESP that the reader thread passes on. While the Herald
/// reconnects (no reader thread), this thread reads the socket itself, so that the keep-alive holds.
///
/// Connecting may wait on DNS and on the broker's SYN-ACK, so it happens on a short-lived thread of its own, which
/// hands the connected socket over. Malformed input ends the connection with a DISCONNECT carrying the decoder's
/// reason code, and an event that says what was wrong.
final class BridgeIO: Sendable {
    /// A deadline of the bridge's own, reported as ``Event/deadline(_:)`` when it comes due.
    enum Deadline: Sendable, Equatable {
        /// Time to post the bridge's state if it changed.
        case state
        /// Time to connect again.
        case reconnect(generation: Int)
    }

    enum Event: Sendable {
        /// The packets of one read, in their order.
        case packets(generation: Int, [Packet])
        /// The connection ended; the reason is for the log.
        case closed(generation: Int, String)
        case deadline(Deadline)
    }

    /// What a connection needs to know from the bridge.
    struct Settings: Sendable {
        var host: String
        var port: UInt16
        /// The CONNECT, written first.
        var first: [UInt8]
        var maximumPacketSize: Int
        /// Our Keep Alive; also how long the broker has to answer CONNECT.
        var keepAlive: UInt16
        var backlog: ImportBacklog
        /// When the bridge asked for the connection (monotonic nanoseconds).
        var started: UInt64
    }

    enum Command {
        case adopt(generation: Int, socket: Socket, Settings)
        /// What a read on the Herald's reader thread found for this thread: the keep-alive, or the connection's end.
        case input(generation: Int, BridgeInput.Outcome)
        /// The Herald's reader thread may have started or stopped watching the socket.
        case watchingChanged
        case failed(generation: Int, String)
        case close(generation: Int)
        case schedule(Deadline, at: UInt64)
        /// Output is pending or a write failed: look at the shared state.
        case output
        case stop
    }

    /// What the bridge's loop and this thread share: the socket's sending side and the commands.
    struct Shared {
        var commands: [Command] = []
        /// The connection the bridge writes to now, and its socket once connected.
        var generation = 0
        var socket: Socket?
        /// What the socket has not taken yet, in order; written by this thread when there is room.
        var pending: [UInt8] = []
        /// When the last write took bytes (monotonic nanoseconds), for the keep-alive.
        var lastSent: UInt64 = 0
        /// Since when the pending output waits without progress.
        var blockedSince: UInt64 = 0
        /// Why a write failed; this thread then ends the connection.
        var failure: String?
    }

    let shared = Mutex(Shared())
    /// Whether output is pending or a write failed, as `shared` said when last changed: lets the I/O thread see
    /// that it has nothing to do without taking the lock, which the bridge's loop holds across its `send`. Taking
    /// it every turn made the two threads meet on it (perf: 4 to 5 % of the exporting bridge in the lock's slow
    /// path, and a priority-inheritance futex wait each time).
    let outputWaiting = Atomic<Bool>(false)
    private let waker: EventLoop<Source>.Waker
    let box: LoopBox
    let onEvent: @Sendable (Event) -> Void
    /// The Herald whose reader thread reads the socket while it is connected; nil: this thread reads it always.
    let herald: Herald?

    /// Starts the I/O thread.
    ///
    /// - Parameters:
    ///   - herald: the Herald whose reader thread is to read the broker's socket, and call `onEvent` for its packets,
    ///     while it is connected; nil: this thread reads it always.
    ///   - onEvent: called on this thread, and for packets on the Herald's reader thread.
    init(herald: Herald? = nil, onEvent: @escaping @Sendable (Event) -> Void) throws(SystemError) {
        let box = LoopBox(try EventLoop<Source>())
        waker = try box.loop.makeWaker()
        self.box = box
        self.onEvent = onEvent
        self.herald = herald
        DetachedThread.start(name: "mqtt-io") { [self] in
            serve()
        }
    }

    // MARK: From the bridge's loop

    /// Starts connection `generation` (the previous one must have ended): resolves and connects on a thread of its
    /// own, then writes `settings.first`.
    func connect(generation: Int, _ settings: Settings) {
        shared.withLock { shared in
            defer { noteOutput(shared) }
            shared.generation = generation
            shared.socket = nil
            shared.pending = []
            shared.failure = nil
        }
        DetachedThread.start(name: "mqtt-connect") { [self] in
            do {
                let socket = try TCPSocket.connect(resolving: settings.host, port: settings.port)
                try socket.setNonBlocking(true)
                command(.adopt(generation: generation, socket: Socket(socket), settings))
            } catch {
                command(.failed(generation: generation, "cannot connect: \(error)"))
            }
        }
    }

    /// Writes `bytes` to connection `generation` now, as far as the socket takes them without blocking; the rest is
    /// written by the I/O thread when there is room. Nothing happens once that connection has ended.
    func send(_ bytes: [UInt8], generation: Int) {
        let wake = shared.withLock { shared -> Bool in
            defer { noteOutput(shared) }
            guard shared.generation == generation, shared.failure == nil else { return false }
            guard let socket = shared.socket, shared.pending.isEmpty else {
                // Connecting (written after CONNECT), or behind output that waits for room already.
                shared.pending.append(contentsOf: bytes)
                return false
            }
            return Self.write(bytes, to: socket, &shared)
        }
        if wake { command(.output) }
    }

    /// Ends connection `generation` after writing what the socket takes of its output; reported as ``Event/closed``.
    func close(generation: Int) {
        command(.close(generation: generation))
    }

    /// Reports `deadline` once `delay` has passed.
    func schedule(_ deadline: Deadline, after delay: Duration) {
        let nanoseconds =
            UInt64(delay.components.seconds) * 1_000_000_000
            + UInt64(delay.components.attoseconds / 1_000_000_000)
        command(.schedule(deadline, at: SystemClock.monotonicNanoseconds() + nanoseconds))
    }

    /// Ends the thread, and the connection with it, without reporting it.
    func stop() {
        command(.stop)
    }

    /// Called by every change of `shared` that may leave output pending or a failure, before the lock is let go.
    func noteOutput(_ shared: borrowing Shared) {
        outputWaiting.store(!shared.pending.isEmpty || shared.failure != nil, ordering: .releasing)
    }

    func command(_ command: Command) {
        shared.withLock { $0.commands.append(command) }
        waker.wake()
    }

    /// Writes `bytes` (the socket's first in line) without blocking; keeps what it did not take as pending.
    ///
    /// - Returns: whether the I/O thread must look: output is pending, or the write failed.
    static func write(_ bytes: [UInt8], to socket: Socket, _ shared: inout Shared) -> Bool {
        let result = bytes.withUnsafeBytes { raw in
            Result { () throws(SystemError) in try socket.descriptor.send(raw) }
        }
        let now = SystemClock.monotonicNanoseconds()
        switch result {
        case .success(.processed(let count)):
            shared.lastSent = now
            guard count < bytes.count else { return false }
            shared.pending.append(contentsOf: bytes[count...])
        case .success(.wouldBlock):
            shared.pending.append(contentsOf: bytes)
        case .failure(let error):
            shared.failure = "write failed: \(error)"
            return true
        }
        shared.blockedSince = now
        return true
    }
}

/// The broker connection's socket, shared by the I/O thread and the writers in `Shared`; closed when both have let it
/// go (the I/O thread deregisters it first).
final class Socket: Sendable {
    let descriptor: FileDescriptor

    init(_ descriptor: consuming FileDescriptor) {
        self.descriptor = descriptor
    }
}
