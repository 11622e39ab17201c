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
    /// How long past the shutdown bound heraldd waits for its plugins: they get SIGKILL 2 s after SIGTERM.
    static let pluginStopBound: UInt64 = 1_500_000_000

    let options: DaemonOptions
    let logger: Logger
    var broker: Broker
    /// The plugins heraldd supervises (Daemon+Plugins.swift).
    var plugins: PluginHost
    var epoll: Epoll
    let signals: SignalFD
    let lock: LockFile
    /// The socket file heraldd bound itself, removed at shutdown if it is still that file; nil under socket
    /// activation, and once removed.
    var socketFile: BoundSocketFile?
    var listener: Listener?
    var channels: [Channel?] = []
    /// Each connection's partial input, by descriptor; apart from `channels` so the broker can be handed a
    /// decoder's frames while both are mutable.
    var decoders: [FrameDecoder] = []
    var openChannels = 0
    /// Descriptors of channels that are closing, for the deadline check.
    var closing: Set<Int32> = []
    var acceptResumesAt: UInt64?
    /// When each connection still without `HELLO` times out (`--hello-timeout-ms`).
    var handshakes = HandshakeDeadlines()
    /// Connections counted as waiting to complete `HELLO` (`Channel.awaitingHello`), for
    /// `--max-incomplete-connections`.
    var incompleteChannels = 0
    /// Connections accepted so far: the next one's `Channel.serial`.
    var acceptedCount: UInt64 = 0
    /// Whether connections are being refused for `--max-incomplete-connections`, so that is logged once per episode
    /// rather than once per connection.
    var refusingIncomplete = false
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
        // Block SIGTERM, SIGINT and SIGHUP before anything else could spawn a thread, and read them from a
        // descriptor in the loop: no async-signal-safety puzzles. (DaemonMain ignores the signals heraldd has no use
        // for.) First of all, so that none of them can end heraldd between binding the socket and the loop, leaving
        // the socket file behind: one arriving meanwhile waits for the loop.
        let signals = try SignalFD(signals: [SIGTERM, SIGINT, SIGHUP, SIGCHLD])
        // Under socket activation systemd has bound the socket and owns its path, which is then the daemon's path
        // whatever the options say: the directory is still checked and the lock taken, so a daemon started by hand
        // refuses, but the socket is neither probed nor replaced.
        var activated = try Self.takeSocketFromSystemd(configuredPath: options.socketPath, logger: logger)
        let path = activated?.path ?? options.socketPath
        do {
            try SocketDirectory.prepare(forSocketAt: path)
        } catch {
            throw StartupError(description: "\(error)")
        }
        guard let lock = try LockFile.acquire(path: path + ".lock") else {
            throw StartupError(description: "another heraldd is already running on \(path) (it holds \(path).lock)")
        }
        let listening: FileDescriptor
        let socketFile: BoundSocketFile?
        if let passed = activated.take() {
            listening = passed.descriptor
            socketFile = nil
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
            do {
                socketFile = try BoundSocketFile(boundAt: path)
            } catch {
                throw StartupError(description: "\(error)")
            }
        }
        let listener = Listener(descriptor: listening)
        let epoll = try Epoll()
        try epoll.add(listener.descriptor.rawValue, events: .readable, data: Self.listenerTag)
        try epoll.add(signals.rawValue, events: .readable, data: Self.signalTag)
        var options = options
        options.socketPath = path
        self.init(
            options: options,
            logger: logger,
            lock: lock,
            socketFile: socketFile,
            listener: listener,
            signals: signals,
            epoll: epoll
        )
    }

    private init(
        options: DaemonOptions,
        logger: Logger,
        lock: consuming LockFile,
        socketFile: consuming BoundSocketFile?,
        listener: Listener,
        signals: consuming SignalFD,
        epoll: consuming Epoll
    ) {
        self.options = options
        self.logger = logger
        self.lock = lock
        self.socketFile = socketFile
        self.listener = listener
        self.signals = signals
        self.epoll = epoll
        plugins = PluginHost(
            enabled: options.plugins,
            folders: .fromEnvironment(),
            inheritedDescriptorLimit: options.inheritedDescriptorLimit
        )
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
        logger.info(
            "connections: up to \(options.bounds.maxConnections) per uid (descriptor limit \(options.descriptorLimit)), "
                + "\(options.maxIncompleteConnections) at once before HELLO, each allowed "
                + "\(options.helloTimeoutMilliseconds) ms to send it"
        )
        notifySystemdReady(path: options.socketPath)
        startPlugins()
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
            pluginRequestsAndSubscriptions()
            checkDeadlines()
            framesLastTurn = framesThisTurn
            framesThisTurn = 0
            broker.takeDirty(into: &dirty)
            flush(dirty)
            dirty.removeAll(keepingCapacity: true)
            broker.endTurn()
            if broker.isOverGlobalBound { relieveGlobalBound() }
            if let deadline = shutdownDeadline {
                let now = SystemClock.monotonicNanoseconds()
                if openChannels > 0 && now >= deadline {
                    logger.warning("closing \(openChannels) connections that did not drain within the shutdown bound")
                    for fd in Int32(0)..<Int32(channels.count) where channels[Int(fd)] != nil {
                        closeChannel(fd, reason: "shutdown bound reached")
                    }
                }
                if openChannels == 0 && plugins.shutdownComplete { break }
                if now >= deadline + Self.pluginStopBound {
                    // Not reached while the supervisor works: it kills at 2 s, and the exits follow at once. Exiting
                    // kills whatever is left anyway (PR_SET_PDEATHSIG).
                    logger.warning("plugins did not exit within the shutdown bound; leaving them to the kernel")
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
        let polling = shutdownDeadline != nil || acceptResumesAt != nil || !closing.isEmpty
        var due = handshakes.nextDeadline
        if let plugin = pluginDeadline { due = min(due ?? plugin, plugin) }
        if broker.hasPendingWills, let will = broker.nextWillDeadline { due = min(due ?? will, will) }
        guard let due else { return polling ? 100 : -1 }
        let now = SystemClock.monotonicNanoseconds()
        // Round up, so the wake-up is never early and the loop does not spin on a 0 ms wait.
        let milliseconds = due <= now ? 0 : Int32(clamping: (due - now + 999_999) / 1_000_000)
        return polling ? min(100, milliseconds) : milliseconds
    }

    private mutating func handle(_ event: Epoll.Event) {
        if event.data & Self.pluginOutputTag != 0 && event.data < Self.signalTag {
            pluginOutputReadable(Int32(truncatingIfNeeded: event.data & ~Self.pluginOutputTag))
            return
        }
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
            if signal == SIGHUP {
                reloadRequested()
            } else if signal == SIGCHLD {
                childrenExited()
            } else {
                beginShutdown(signal: signal)
            }
        }
    }

    /// SIGHUP: the conventional request to re-read configuration. It never stops heraldd: it rereads the plugin
    /// folders.
    private mutating func reloadRequested() {
        logger.notice("SIGHUP received: reload requested")
        reloadPlugins()
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
        // A socket systemd bound stays: systemd listens on it again and starts heraldd on the next connection (and
        // then `socketFile` is nil). The file heraldd bound is removed through its directory's descriptor, and only if
        // it is still that file: the path may lead elsewhere by now.
        if let file = socketFile.take() {
            do {
                if try !file.remove() {
                    logger.warning("left \(options.socketPath) alone: it is no longer the socket heraldd bound")
                }
            } catch {
                logger.warning("cannot remove \(options.socketPath): \(error)")
            }
        }
        broker.shutDown()
        for fd in Int32(0)..<Int32(channels.count) where channels[Int(fd)] != nil {
            beginClosing(fd)
        }
        stopPlugins()
        shutdownDeadline = SystemClock.monotonicNanoseconds() + Self.flushBound
    }

    private mutating func checkDeadlines() {
        // Most turns have nothing due: no clock read then.
        guard
            broker.hasPendingWills || acceptResumesAt != nil || !closing.isEmpty || !handshakes.isEmpty
                || plugins.wakeAt != nil || plugins.owesOutputCounts
        else {
            return
        }
        let now = SystemClock.monotonicNanoseconds()
        pluginDeadlines(monotonicNow: now)
        expireHandshakes(now: now)
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
