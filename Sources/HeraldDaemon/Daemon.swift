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

/// heraldd's event loop: one thread, one ``EventLoop``, non-blocking sockets. It moves bytes between sockets and the
/// `Broker`, which makes every decision; this type only does I/O.
///
/// Fairness: each readable connection gets one read of at most 64 KiB per turn of the loop, so a flooding publisher
/// cannot starve the others. Writes are batched: after a turn's reads, every connection with new output is written
/// from its queue's buffer, usually with one `send`.
///
/// A non-copyable struct rather than a class: the loop's state is then accessed through `self` statically, where a
/// class's stored `broker` and each channel's `decoder` were checked for exclusive access at run time on every call
/// (four such checks a post, ~500 instructions, in the profile).
struct Daemon: ~Copyable {
    /// What each registration and timer of the loop is for.
    enum Handler {
        case listener
        case connection(Int32)
        /// A plugin's output pipe.
        case pluginOutput(Int32)
        /// A started plugin's report pipe: whether its exec worked.
        case pluginExec(Int32)
        /// A connection accepted as `serial` on this descriptor is due to have sent `HELLO`.
        case helloTimeout(fd: Int32, serial: UInt64)
        /// A closing connection's output had its time (``flushBound``).
        case closeBound(fd: Int32, serial: UInt64)
        case resumeAccepting
        /// The broker's earliest pending will is due.
        case wills
        /// The plugin supervisor asked to be woken.
        case plugins
        /// Counts of dropped plugin output lines may be owed.
        case pluginOutputCounts
        /// More of the plugin host's work, a share a turn (``PluginHost/Work``).
        case pluginWork(PluginHost.Work)
        /// The shutdown's flush bound passed.
        case shutdownBound
        /// The plugins' exit bound after the flush bound passed.
        case pluginStopBound
        /// The next step of the state log's compaction (Daemon+State).
        case stateCompaction
    }

    /// How long a closing connection, or the whole shutdown, may take to flush.
    static let flushBound: UInt64 = 2_000_000_000
    /// How many rounds of reads one round of writes may follow, while input keeps arriving.
    static let readRoundsPerWrite = 4
    /// A turn that handled at least this many frames, ending less than ``coalesceWithin`` nanoseconds after the last
    /// blocking wait returned, lets input gather before the next wait (see ``waitForEvents()``). A post that arrives
    /// alone never waits.
    static let framesToCoalesce = 8
    static let coalesceWithin: UInt64 = 100_000
    /// How long to stop accepting after running out of descriptors.
    static let acceptPause: UInt64 = 100_000_000
    /// How long past the shutdown bound heraldd waits for its plugins: they get SIGKILL 2 s after SIGTERM.
    static let pluginStopBound: UInt64 = 1_500_000_000

    let options: DaemonOptions
    let logger: Logger
    var broker: Broker
    /// The plugins heraldd supervises (Daemon+Plugins.swift).
    var plugins: PluginHost
    /// Descriptors, timers, signals and batched sends.
    var loop: EventLoop<Handler>
    let lock: LockFile
    /// The socket file heraldd bound itself, removed at shutdown if it is still that file; nil under socket
    /// activation, and once removed.
    var socketFile: BoundSocketFile?
    var listener: Listener?
    var channels: [Channel?] = []
    /// What the broker asked for, reused by every event (``carryOutActions()``).
    var actions: [BrokerAction] = []
    /// Whether ``carryOutActions()`` is running.
    var carryingOut = false
    var openChannels = 0
    /// Whether accepting is paused after running out of descriptors.
    var acceptPaused = false
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
    /// Set when the broker asks for another round of reads (``BrokerAction/readAnotherRound``).
    var readsAnotherRound = false
    /// What relieving `--max-queued-bytes` did since it was last logged.
    var reliefLog = GlobalBoundLog()
    var shutdownDeadline: UInt64?
    /// Set when the plugins did not exit within their bound after shutdown: the loop ends anyway.
    var abandonPlugins = false
    /// The timer set for the broker's next will (``BrokerAction/wakeAt(_:)``).
    var willTimer: TimerID?
    /// Frames handed to the broker since the last round of writes.
    var framesThisTurn = 0
    /// The frames the last turn handled, for ``waitForEvents()``.
    var framesLastTurn = 0
    /// The state log (Daemon+State), nil when it cannot be written.
    var state: StateStore?
    /// The state logs systemd passed back from its descriptor store, for ``openState()``.
    var storedState: [SystemdActivation.StoredDescriptor] = []
    /// The plugins' processes the state log held at start, left by the last heraldd: ended, with the record
    /// cleared, when the plugins start (Daemon+Descendants), and carried into compacted copies until then.
    var pluginLeftovers: [Int32: UInt64] = [:]
    /// When the last blocking wait for events returned (not a check that did not block), for ``waitForEvents()``.
    var lastWokeAt: UInt64 = 0

    let readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65536, alignment: 16)
    /// The ranges of a connection's queued output handed to one `writev`.
    let writeVector = UnsafeMutableBufferPointer<iovec>.allocate(capacity: 64)
    /// At most this many bytes are offered to one write: about what a Unix socket's buffer takes.
    static let writeBytes = 256 * 1024

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
        var loop = try EventLoop<Handler>(signals: [SIGTERM, SIGINT, SIGHUP, SIGCHLD])
        // Under socket activation systemd has bound the socket and owns its path, which is then the daemon's path
        // whatever the options say: the directory is still checked and the lock taken, so a daemon started by hand
        // refuses, but the socket is neither probed nor replaced.
        var stored: [SystemdActivation.StoredDescriptor] = []
        var activated = try Self.takeSocketFromSystemd(
            configuredPath: options.socketPath,
            logger: logger,
            stored: &stored
        )
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
        try loop.register(listener.descriptor.rawValue, interest: .readable, handler: .listener)
        var options = options
        options.socketPath = path
        self.init(
            options: options,
            logger: logger,
            lock: lock,
            socketFile: socketFile,
            listener: listener,
            loop: loop
        )
        storedState = stored
    }

    private init(
        options: DaemonOptions,
        logger: Logger,
        lock: consuming LockFile,
        socketFile: consuming BoundSocketFile?,
        listener: Listener,
        loop: consuming EventLoop<Handler>
    ) {
        self.options = options
        self.logger = logger
        self.lock = lock
        self.socketFile = socketFile
        self.listener = listener
        self.loop = loop
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
        configuration.maxVersion = options.maxProtocolVersion
        broker = Broker(configuration: configuration)
        if options.sendBatching {
            do {
                try self.loop.enableSendBatching()
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
    }

    /// Runs until SIGTERM or SIGINT, then flushes within the bound and returns.
    mutating func run() {
        logger.notice("ready on \(options.socketPath) (pid \(ProcessIdentity.currentPID()))")
        logger.info(
            "connections: up to \(options.bounds.maxConnections) per uid (descriptor limit \(options.descriptorLimit)), "
                + "\(options.maxIncompleteConnections) at once before HELLO, each allowed "
                + "\(options.helloTimeoutMilliseconds) ms to send it"
        )
        openState()
        notifySystemdReady(path: options.socketPath)
        startPlugins()
        while true {
            let count = waitForEvents()
            handleEvents(count)
            // Under load, with output for several connections, read a little more before writing while input keeps
            // arriving: each connection then gets more frames per send. A bounded number of rounds, and none once
            // the loop would wait, so a post that arrives alone (the latency case) is written at once, and one
            // subscriber's batch (already one send per turn) costs no extra epoll_wait.
            var rounds = 1
            while count > 0 && rounds < Self.readRoundsPerWrite && shutdownDeadline == nil && readRoundEnded() {
                let more = poll(timeoutMilliseconds: 0)
                if more == 0 { break }
                handleEvents(more)
                rounds += 1
            }
            framesLastTurn = framesThisTurn
            framesThisTurn = 0
            writeTurnOutput()
            broker.turnEnded(into: &actions)
            carryOutActions()
            if shutdownDeadline != nil && openChannels == 0 && plugins.shutdownComplete || abandonPlugins { break }
        }
        if broker.hasStateToWrite { writeState() }
        logger.notice("stopped")
    }

    /// Tells the broker a round of reads ended.
    ///
    /// - Returns: Whether it asked for another round before writing (``BrokerAction/readAnotherRound``).
    private mutating func readRoundEnded() -> Bool {
        readsAnotherRound = false
        broker.readRoundEnded(into: &actions)
        carryOutActions()
        return readsAnotherRound
    }

    /// Waits for the next events, and returns how many the loop has for ``handleEvents(_:)``.
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
        if options.coalesceNanoseconds > 0 && framesLastTurn >= Self.framesToCoalesce
            && SystemClock.monotonicNanoseconds() &- lastWokeAt < Self.coalesceWithin
        {
            let ready = poll(timeoutMilliseconds: 0)
            if ready > 0 { return ready }
            SystemClock.sleep(nanoseconds: options.coalesceNanoseconds)
        }
        let ready = poll(timeoutMilliseconds: -1)
        lastWokeAt = SystemClock.monotonicNanoseconds()
        return ready
    }

    private mutating func poll(timeoutMilliseconds: Int32) -> Int {
        do {
            return try loop.wait(timeoutMilliseconds: timeoutMilliseconds)
        } catch {
            // epoll_wait fails only for a bad argument, and a signalfd read only for our own bug: not conditions to
            // survive.
            fatalError("the event loop failed: \(error)")
        }
    }

    private mutating func handleEvents(_ count: Int) {
        for index in 0..<count {
            guard let event = loop.event(at: index) else { continue }
            switch event {
            case .ready(let handler, let events):
                switch handler {
                case .connection(let fd): connectionReady(fd, events)
                case .listener: acceptConnections()
                case .pluginOutput(let fd): pluginOutputReadable(fd)
                case .pluginExec(let fd): pluginExecReported(fd)
                default: break
                }
            case .timer(let handler):
                timerFired(handler)
            case .signal(let signal):
                signalArrived(signal)
            case .wakeup:
                break
            }
            carryOutActions()
        }
    }

    private mutating func connectionReady(_ fd: Int32, _ events: Epoll.Events) {
        guard let channel = channels[Int(fd)] else { return }
        if events.contains(.readable) {
            readChannel(fd)
        } else if !events.intersection([.hangup, .error]).isEmpty {
            // Hang-up with reading paused: nothing more will be read or written.
            closeChannel(fd, reason: "hang-up")
            return
        }
        if channels[Int(fd)] === channel, events.contains(.writable) {
            flush(fd)
        }
    }

    private mutating func timerFired(_ handler: Handler) {
        switch handler {
        case .helloTimeout(let fd, let serial):
            helloTimedOut(fd, serial: serial)
        case .closeBound(let fd, let serial):
            if let channel = channels[Int(fd)], channel.serial == serial {
                closeChannel(fd, reason: "its output was not read within the close bound")
            }
        case .resumeAccepting:
            resumeAccepting()
        case .wills:
            willTimer = nil
            let posted = broker.postDueWills(
                monotonicNow: SystemClock.monotonicNanoseconds(),
                realtimeNow: SystemClock.realtimeNanoseconds()
            )
            if posted > 0 { logger.info("posted \(posted) will\(posted == 1 ? "" : "s")") }
        case .plugins:
            pluginTimerFired()
        case .pluginOutputCounts:
            pluginOutputCountsDue()
        case .pluginWork(let work):
            pluginWorkDue(work)
        case .shutdownBound:
            if openChannels > 0 {
                logger.warning("closing \(openChannels) connections that did not drain within the shutdown bound")
                for fd in Int32(0)..<Int32(channels.count) where channels[Int(fd)] != nil {
                    closeChannel(fd, reason: "shutdown bound reached")
                }
            }
        case .pluginStopBound:
            if !plugins.shutdownComplete {
                // Not reached while the supervisor works: it kills at 2 s, and the exits follow at once. Exiting
                // kills whatever is left anyway (PR_SET_PDEATHSIG).
                logger.warning("plugins did not exit within the shutdown bound; leaving them to the kernel")
                abandonPlugins = true
            }
        case .stateCompaction:
            compactionStepDue()
        case .listener, .connection, .pluginOutput, .pluginExec:
            break
        }
    }

    /// Writes every connection with new output this turn, in batches where the loop has a ``SendBatcher``.
    private mutating func writeTurnOutput() {
        broker.turnEnding(into: &actions)
        for action in actions {
            if case .write(let id) = action { dirty.append(id) }
        }
        actions.removeAll(keepingCapacity: true)
        flush(dirty)
        dirty.removeAll(keepingCapacity: true)
        carryOutActions()
    }
}
