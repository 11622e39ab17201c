import HeraldBroker
import HeraldPosix
import HeraldWire

#if canImport(Glibc)
import Glibc
#endif

/// Why heraldd could not start, in words for the person who started it.
struct StartupError: Error, CustomStringConvertible {
    var description: String
}

/// heraldd's event loop: one thread, one epoll instance, non-blocking sockets. It moves bytes between
/// sockets and the `Broker`, which makes every decision; this type only does I/O.
///
/// Fairness: each readable connection gets one read of at most 64 KiB per turn of the loop, so a
/// flooding publisher cannot starve the others. Writes are batched: after a turn's reads, every
/// connection with new output is written from its queue's buffer, usually with one `send`.
///
/// A non-copyable struct rather than a class: the loop's state is then accessed through `self` statically,
/// where a class's stored `broker` and each channel's `decoder` were checked for exclusive access at run time
/// on every call (four such checks a post, ~500 instructions, in the profile).
struct Daemon: ~Copyable {
    static let listenerTag = UInt64.max
    static let signalTag = UInt64.max - 1
    /// How long a closing connection, or the whole shutdown, may take to flush.
    static let flushBound: UInt64 = 2_000_000_000
    /// How many rounds of reads one round of writes may follow, while input keeps arriving.
    static let readRoundsPerWrite = 4
    /// A turn that handled at least this many frames, ending less than ``coalesceWithin`` nanoseconds after the last
    /// blocking wait returned, lets input gather before the next wait (see ``waitForEvents()``). A post that arrives
    /// alone never waits.
    static let framesToCoalesce = 8
    static let coalesceWithin: UInt64 = 100_000
    /// How many frames a turn must have handled before it reads another round instead of writing.
    static let framesForAnotherRound = 16
    /// How long to stop accepting after running out of descriptors.
    static let acceptPause: UInt64 = 100_000_000

    let options: DaemonOptions
    let logger: Logger
    var broker: Broker
    var epoll: Epoll
    let signals: SignalFD
    let lock: LockFile
    /// Whether systemd bound the listening socket (socket activation): then its path is systemd's to remove.
    let systemdOwnsSocket: Bool
    var listener: Listener?
    var channels: [Channel?] = []
    /// Each connection's partial input, by descriptor; apart from `channels` so the broker can be handed a
    /// decoder's frames while both are mutable.
    var decoders: [FrameDecoder] = []
    var openChannels = 0
    /// Descriptors of channels that are closing, for the deadline check.
    var closing: Set<Int32> = []
    var acceptResumesAt: UInt64?
    /// Reused each turn for the connections with new output.
    var dirty: [ConnectionID] = []
    /// Reused for connections whose queue passed half its bound mid-batch.
    var urgentScratch: [ConnectionID] = []
    /// What relieving `--max-queued-bytes` did since it was last logged.
    var reliefLog = GlobalBoundLog()
    var shutdownDeadline: UInt64?
    /// Frames handed to the broker since the last round of writes.
    var framesThisTurn = 0
    /// The frames the last turn handled, for ``waitForEvents()``.
    var framesLastTurn = 0
    /// When the last blocking wait for events returned (not a check that did not block), for ``waitForEvents()``.
    var lastWokeAt: UInt64 = 0

    let readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65536, alignment: 16)
    /// The ranges of a connection's queued output handed to one `writev`.
    let writeVector = UnsafeMutableBufferPointer<iovec>.allocate(capacity: 64)
    /// At most this many bytes are offered to one write: about what a Unix socket's buffer takes.
    static let writeBytes = 256 * 1024
    let events = UnsafeMutableBufferPointer<Epoll.Event>.allocate(capacity: 256)
    /// Writes a turn's output to all its connections in one system call; nil when the kernel offers no io_uring
    /// or `--no-send-batching` is given, and then each connection gets its own send.
    var batchWriter: BatchWriter?

    /// Claims the socket path and starts listening.
    ///
    /// - Throws: `StartupError` when the directory is unsafe, another daemon owns the path, or the socket
    ///   cannot be bound; `SystemError` for other failures.
    init(options: DaemonOptions) throws {
        // Everything that can fail happens before `self` is initialised: a non-copyable value cannot be left
        // half made.
        let logger = Logger(label: "heraldd", level: options.logLevel)
        let path = options.socketPath
        // Under socket activation systemd has bound the socket and owns its path: the directory is still checked and
        // the lock taken, so a daemon started by hand refuses, but the socket is neither probed nor replaced.
        var activated = try Self.takeSocketFromSystemd(configuredPath: path, logger: logger)
        let systemdOwnsSocket = activated != nil
        do {
            try SocketDirectory.prepare(forSocketAt: path)
        } catch {
            throw StartupError(description: "\(error)")
        }
        guard let lock = try LockFile.acquire(path: path + ".lock") else {
            throw StartupError(description: "another heraldd is already running on \(path) (it holds \(path).lock)")
        }
        let listening: FileDescriptor
        if let passed = activated.take() {
            listening = passed
        } else {
            if UnixSocket.isAlive(path: path) {
                throw StartupError(description: "another heraldd is already answering on \(path)")
            }
            do {
                try SocketDirectory.removeStaleSocket(at: path)
            } catch {
                throw StartupError(description: "\(error)")
            }
            do {
                listening = try UnixSocket.listen(path: path)
            } catch {
                throw StartupError(description: "\(error)")
            }
        }
        let listener = Listener(descriptor: listening)
        // Block SIGTERM and SIGINT before anything else could spawn a thread, and read them from a
        // descriptor in the loop: no async-signal-safety puzzles.
        let signals = try SignalFD(signals: [SIGTERM, SIGINT])
        let epoll = try Epoll()
        try epoll.add(listener.descriptor.rawValue, events: .readable, data: Self.listenerTag)
        try epoll.add(signals.rawValue, events: .readable, data: Self.signalTag)
        self.init(
            options: options,
            logger: logger,
            lock: lock,
            systemdOwnsSocket: systemdOwnsSocket,
            listener: listener,
            signals: signals,
            epoll: epoll
        )
    }

    private init(
        options: DaemonOptions,
        logger: Logger,
        lock: consuming LockFile,
        systemdOwnsSocket: Bool,
        listener: Listener,
        signals: consuming SignalFD,
        epoll: consuming Epoll
    ) {
        self.options = options
        self.logger = logger
        self.lock = lock
        self.systemdOwnsSocket = systemdOwnsSocket
        self.listener = listener
        self.signals = signals
        self.epoll = epoll
        var configuration = Broker.Configuration(
            ownerUID: ProcessIdentity.effectiveUID(),
            daemonPID: ProcessIdentity.currentPID(),
            server: "heraldd \(DaemonOptions.version)",
            startTime: SystemClock.realtimeNanoseconds()
        )
        configuration.bounds = options.bounds
        broker = Broker(configuration: configuration)
        if options.sendBatching {
            do {
                batchWriter = try BatchWriter()
                logger.info("sends: each turn's output in one io_uring batch")
            } catch {
                logger.notice("sends: one send(2) per connection, as io_uring is not available: \(error)")
            }
        } else {
            logger.info("sends: one send(2) per connection (--no-send-batching)")
        }
    }

    deinit {
        readBuffer.deallocate()
        writeVector.deallocate()
        events.deallocate()
    }

    /// Runs until SIGTERM or SIGINT, then flushes within the bound and returns.
    mutating func run() {
        logger.notice("ready on \(options.socketPath) (pid \(ProcessIdentity.currentPID()))")
        notifySystemdReady(path: options.socketPath)
        while true {
            let count = waitForEvents()
            for index in 0..<count {
                handle(events[index])
            }
            // Under load, with output for several connections, read a little more before writing while input keeps
            // arriving: each connection then gets more frames per send. A bounded number of rounds, and none once
            // the loop would wait, so a post that arrives alone (the latency case) is written at once, and one
            // subscriber's batch (already one send per turn) costs no extra epoll_wait.
            var rounds = 1
            while count > 0 && rounds < Self.readRoundsPerWrite && shutdownDeadline == nil
                && framesThisTurn >= Self.framesForAnotherRound && broker.dirtyCount > 1
            {
                let more: Int
                do {
                    more = try epoll.wait(into: events, timeoutMilliseconds: 0)
                } catch {
                    fatalError("epoll_wait failed: \(error)")
                }
                if more == 0 { break }
                for index in 0..<more {
                    handle(events[index])
                }
                rounds += 1
            }
            checkDeadlines()
            framesLastTurn = framesThisTurn
            framesThisTurn = 0
            broker.takeDirty(into: &dirty)
            flush(dirty)
            dirty.removeAll(keepingCapacity: true)
            broker.endTurn()
            if broker.isOverGlobalBound { relieveGlobalBound() }
            if let deadline = shutdownDeadline {
                if openChannels == 0 { break }
                if SystemClock.monotonicNanoseconds() >= deadline {
                    logger.warning("closing \(openChannels) connections that did not drain within the shutdown bound")
                    for fd in Int32(0)..<Int32(channels.count) where channels[Int(fd)] != nil {
                        closeChannel(fd, reason: "shutdown bound reached")
                    }
                    break
                }
            }
        }
        logger.notice("stopped")
    }

    /// Waits for the next events, and returns how many are in `events`.
    ///
    /// Under load, with nothing ready yet, heraldd first sleeps `--coalesce-us` (20 µs, plus the kernel's timer
    /// slack) and only then waits, as a network card moderates its interrupts. Under load means the last turn handled
    /// at least ``framesToCoalesce`` frames and ended less than ``coalesceWithin`` after heraldd last returned from a
    /// blocking wait: many frames, in small turns, between sleeps. (Turns that follow one another without blocking
    /// need no moderation: nobody is woken.)
    ///
    /// Why, from the profiles at fan-out 1: when heraldd keeps up, it blocks after every turn, so each post a client
    /// writes has to wake it on the other core, which costs the writer a cross-CPU wake-up and gives heraldd small
    /// turns. A run then settles into a slow mode in which both cost about twice as much per post (heraldd 1.04 µs
    /// and the publisher 1.28 µs, against 0.56 and 0.88 in the fast mode), and stays there. While heraldd sleeps it is
    /// not on the epoll wait queue, so writes wake nobody and gather into one read. A post arriving alone (the latency
    /// case) makes a turn of one frame and is never held. At fan-out 10 turns are long (hundreds of frames, ten large
    /// sends), and sleeping after each of them cost 3 % of the throughput, hence the time condition.
    private mutating func waitForEvents() -> Int {
        do {
            if options.coalesceNanoseconds > 0 && framesLastTurn >= Self.framesToCoalesce
                && SystemClock.monotonicNanoseconds() &- lastWokeAt < Self.coalesceWithin
            {
                let ready = try epoll.wait(into: events, timeoutMilliseconds: 0)
                if ready > 0 { return ready }
                SystemClock.sleep(nanoseconds: options.coalesceNanoseconds)
            }
            let ready = try epoll.wait(into: events, timeoutMilliseconds: nextTimeout())
            lastWokeAt = SystemClock.monotonicNanoseconds()
            return ready
        } catch {
            // epoll_wait fails only for a bad argument: our bug, not a condition to survive.
            fatalError("epoll_wait failed: \(error)")
        }
    }

    private func nextTimeout() -> Int32 {
        if shutdownDeadline != nil || acceptResumesAt != nil || !closing.isEmpty { return 100 }
        if broker.hasPendingWills, let due = broker.nextWillDeadline {
            let now = SystemClock.monotonicNanoseconds()
            // Round up, so the wake-up is never early and the loop does not spin on a 0 ms wait.
            return due <= now ? 0 : Int32(clamping: (due - now + 999_999) / 1_000_000)
        }
        return -1
    }

    private mutating func handle(_ event: Epoll.Event) {
        switch event.data {
        case Self.signalTag:
            handleSignals()
        case Self.listenerTag:
            acceptConnections()
        default:
            let fd = Int32(truncatingIfNeeded: event.data)
            guard let channel = channels[Int(fd)] else { return }
            if event.events.contains(.readable) {
                readChannel(fd)
            } else if !event.events.intersection([.hangup, .error]).isEmpty {
                // Hang-up with reading paused: nothing more will be read or written.
                closeChannel(fd, reason: "hang-up")
                return
            }
            if channels[Int(fd)] === channel, event.events.contains(.writable) {
                flush(fd)
            }
        }
    }

    private mutating func handleSignals() {
        while true {
            let signal: Int32?
            do {
                signal = try signals.readSignal()
            } catch {
                logger.error("cannot read signals: \(error)")
                return
            }
            guard let signal else { return }
            beginShutdown(signal: signal)
        }
    }

    private mutating func beginShutdown(signal: Int32) {
        guard shutdownDeadline == nil else { return }
        logger.notice("\(signal == SIGINT ? "SIGINT" : "SIGTERM") received: shutting down")
        if let listener {
            try? epoll.remove(listener.descriptor.rawValue)
            self.listener = nil
        }
        acceptResumesAt = nil
        notifySystemdStopping()
        // A socket systemd bound stays: systemd listens on it again and starts heraldd on the next connection.
        do {
            if !systemdOwnsSocket { try SocketDirectory.removeStaleSocket(at: options.socketPath) }
        } catch {
            logger.warning("cannot remove \(options.socketPath): \(error)")
        }
        broker.shutDown()
        for fd in Int32(0)..<Int32(channels.count) where channels[Int(fd)] != nil {
            beginClosing(fd)
        }
        shutdownDeadline = SystemClock.monotonicNanoseconds() + Self.flushBound
    }

    private mutating func checkDeadlines() {
        // Most turns have nothing due: no clock read then.
        guard broker.hasPendingWills || acceptResumesAt != nil || !closing.isEmpty else { return }
        let now = SystemClock.monotonicNanoseconds()
        let posted = broker.postDueWills(monotonicNow: now, realtimeNow: SystemClock.realtimeNanoseconds())
        if posted > 0 { logger.info("posted \(posted) will\(posted == 1 ? "" : "s")") }
        if let resume = acceptResumesAt, now >= resume, let listener {
            acceptResumesAt = nil
            do {
                try epoll.add(listener.descriptor.rawValue, events: .readable, data: Self.listenerTag)
                logger.info("accepting connections again")
            } catch {
                logger.error("cannot watch the listening socket again: \(error)")
                acceptResumesAt = now + Self.acceptPause
            }
        }
        for fd in closing {
            if let deadline = channels[Int(fd)]?.closeDeadline, now >= deadline {
                closeChannel(fd, reason: "its output was not read within the close bound")
            }
        }
    }
}
