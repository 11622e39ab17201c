import HeraldBroker
import HeraldCommandLine
import HeraldPosix
import HeraldWire

/// heraldd's command line, parsed and checked.
struct DaemonOptions {
    var socketPath: String
    /// Whether the path came from `--socket` (for messages only: the directory rules are the same).
    var socketIsExplicit: Bool
    var logLevel: Logger.Level
    /// Whether heraldd keeps a state log (`--no-state` turns it off).
    var keepsState = true
    /// `--state-file`, when given.
    var explicitStatePath: String?
    /// Where the state log is kept without systemd's descriptor store: `--state-file`, else beside the socket, so
    /// that daemons on different sockets (parallel tests, `herald demo`) never share one, and the default socket's
    /// lies under `$XDG_RUNTIME_DIR/herald/`.
    var statePath: String { explicitStatePath ?? socketPath + ".state" }
    /// The broker's bounds, from their flags.
    var bounds = Broker.Bounds()
    /// Whether a turn's output goes out in one io_uring batch when the kernel allows it (`--no-send-batching`
    /// turns it off: then each connection gets its own send, as on a kernel without io_uring).
    /// Whether heraldd reads its plugin folders and supervises plugins (`--no-plugins` turns it off).
    var plugins = true
    /// The soft descriptor limit heraldd was started with, before it raised its own: what its plugins get.
    var inheritedDescriptorLimit: UInt64 = 0
    var sendBatching = true
    /// Under load (see `Daemon.waitForEvents`), how long heraldd lets input gather before it waits for more
    /// (`--coalesce-us`); 0 turns it off.
    var coalesceNanoseconds: UInt64 = 20_000
    /// The highest protocol version spoken (`--max-protocol-version`); 1 answers as a version 1 daemon does.
    var maxProtocolVersion = ProtocolVersion.supported.upperBound
    /// How long a connection may stay without completing `HELLO` before it is closed with `HELLO_TIMEOUT`
    /// (`--hello-timeout-ms`).
    var helloTimeoutMilliseconds = DaemonOptions.defaultHelloTimeoutMilliseconds
    /// How many connections, of all uids, may be waiting to complete `HELLO` at once
    /// (`--max-incomplete-connections`); past it a new connection is refused with `TOO_MANY_CONNECTIONS`.
    var maxIncompleteConnections = DaemonOptions.defaultMaxIncompleteConnections
    /// The soft `RLIMIT_NOFILE` heraldd runs with, for its startup line.
    var descriptorLimit: UInt64

    static let version = "0.1.0"
    static let defaultHelloTimeoutMilliseconds = 5000
    static let defaultMaxIncompleteConnections = 1024
    /// Descriptors kept back from the connections' default (`--max-connections`): the listener, epoll, the signalfd,
    /// the lock, io_uring, standard streams, and what is opened later (plugins).
    static let reservedDescriptors = 64

    /// `--max-connections` when not given: as many as the descriptor limit leaves after ``reservedDescriptors``, and
    /// never fewer than the protocol's old default of 256.
    ///
    /// Under a very low limit the floor lets descriptors, not the count, be the bound: running out pauses accepting
    /// (`Daemon.acceptConnections`), which is what a limit of 24 should mean, not one connection per uid.
    ///
    /// - Parameter descriptorLimit: the soft `RLIMIT_NOFILE` in force, after heraldd raised it to the hard limit.
    static func defaultMaxConnections(descriptorLimit: UInt64) -> Int {
        let reserve = UInt64(reservedDescriptors)
        let available = descriptorLimit > reserve ? descriptorLimit - reserve : 0
        return Int(min(max(available, UInt64(Limits.defaultMaxConnections)), 1_000_000))
    }

    static let spec = CommandSpec(
        name: "heraldd",
        abstract: "Broker named notifications between the processes of a desktop session.",
        discussion: """
            heraldd listens on a Unix domain socket that only its user (and root) may use, and delivers \
            every post to each connection subscribed to a matching name, with the sender's pid, uid and \
            gid taken from the kernel. The socket is --socket PATH, else $HERALD_SOCKET, else \
            $XDG_RUNTIME_DIR/herald/socket, else /tmp/herald-$UID/socket. Its directory is created with \
            mode 0700 when missing, and refused when it is not ours or not 0700.
            """,
        options: [
            OptionSpec(long: "socket", short: "s", valueName: "path", help: "The socket to listen on."),
            OptionSpec(
                long: "log-level",
                valueName: "level",
                help: "debug, info, notice, warning or error.",
                defaultDescription: "info"
            ),
            OptionSpec(
                long: "queue-bytes",
                valueName: "bytes",
                help: "Bound of each connection's outgoing queue; past it the oldest notifications are dropped.",
                defaultDescription: "\(Limits.defaultQueueBytes)"
            ),
            OptionSpec(
                long: "max-payload",
                valueName: "bytes",
                help: "The largest payload accepted.",
                defaultDescription: "\(Limits.defaultMaxPayload)"
            ),
            OptionSpec(
                long: "max-name-bytes",
                valueName: "bytes",
                help: "The longest name or pattern accepted, at most 255.",
                defaultDescription: "\(Limits.maxNameBytes)"
            ),
            OptionSpec(
                long: "max-subscriptions",
                valueName: "count",
                help: "Subscriptions one connection may hold.",
                defaultDescription: "\(Limits.defaultMaxSubscriptions)"
            ),
            OptionSpec(
                long: "max-pattern-cost",
                valueName: "cost",
                help: "Segments of wildcard patterns one connection's subscriptions may hold together.",
                defaultDescription: "\(Limits.defaultMaxPatternCost)"
            ),
            OptionSpec(
                long: "max-names",
                valueName: "count",
                help: "Names a NAMES answer may list; past it NAMES is refused with TOO_MANY_NAMES.",
                defaultDescription: "\(Limits.defaultMaxNames)"
            ),
            OptionSpec(
                long: "max-retained",
                valueName: "count",
                help: "Names that may hold a retained value.",
                defaultDescription: "\(Limits.defaultMaxRetained)"
            ),
            OptionSpec(
                long: "max-retained-bytes",
                valueName: "bytes",
                help: "Bound of the names and payloads of all retained values together.",
                defaultDescription: "\(Limits.defaultMaxRetainedBytes)"
            ),
            OptionSpec(
                long: "max-wills",
                valueName: "count",
                help: "Wills held at once, registered or pending after their connection closed.",
                defaultDescription: "\(Limits.defaultMaxWills)"
            ),
            OptionSpec(
                long: "max-will-bytes",
                valueName: "bytes",
                help: "Bound of the names and payloads of those wills together.",
                defaultDescription: "\(Limits.defaultMaxWillBytes)"
            ),
            OptionSpec(
                long: "max-connections",
                valueName: "count",
                help: "Connections one uid may hold at once.",
                defaultDescription:
                    "the descriptor limit, raised to its hard limit, less \(reservedDescriptors); at least "
                    + "\(Limits.defaultMaxConnections)"
            ),
            OptionSpec(
                long: "max-incomplete-connections",
                valueName: "count",
                help: "Connections that may be waiting to complete HELLO at once; past it new ones are refused.",
                defaultDescription: "\(defaultMaxIncompleteConnections)"
            ),
            OptionSpec(
                long: "hello-timeout-ms",
                valueName: "milliseconds",
                help: "Close a connection that has not completed HELLO this long after connecting.",
                defaultDescription: "\(defaultHelloTimeoutMilliseconds)"
            ),
            OptionSpec(
                long: "max-queued-bytes",
                valueName: "bytes",
                help: "Bound of the frames queued for all connections together; past it the largest holders shed.",
                defaultDescription: "\(Limits.defaultMaxQueuedBytes)"
            ),
            OptionSpec(
                long: "no-send-batching",
                help: "Write each connection with its own send(2), not all of a turn's in one io_uring batch."
            ),
            OptionSpec(
                long: "max-protocol-version",
                valueName: "version",
                help: "The highest wire protocol version to speak; 1 makes every ERROR final, as version 1 did.",
                defaultDescription: "\(ProtocolVersion.supported.upperBound)"
            ),
            OptionSpec(
                long: "coalesce-us",
                valueName: "microseconds",
                help: "Under load, let input gather this long before waiting for more; 0 turns it off.",
                defaultDescription: "20"
            ),
            OptionSpec(
                long: "state-file",
                valueName: "path",
                help: "Keep the retained values and wills in this log, to survive a crash or a restart.",
                defaultDescription: "the socket's path + .state"
            ),
            OptionSpec(
                long: "no-state",
                help: "Keep no state log: retained values and wills end with heraldd (benchmarks, throwaway daemons)."
            ),
            OptionSpec(
                long: "no-plugins",
                help: "Start no plugins: read no plugin folder, and refuse PLUGIN requests."
            ),
            OptionSpec(long: "version", help: "Show the version."),
        ]
    )

    /// Builds the options from parsed arguments.
    ///
    /// - Parameter descriptorLimit: the soft `RLIMIT_NOFILE` heraldd runs with, which sets the default of
    ///   `--max-connections`.
    /// - Throws: `UsageError` for a value out of range.
    init(_ arguments: ParsedArguments, descriptorLimit: UInt64) throws(UsageError) {
        self.descriptorLimit = descriptorLimit
        let explicit = arguments.value("socket")
        socketIsExplicit = explicit != nil
        socketPath = SocketPath.resolve(explicit: explicit)
        let levelText = arguments.value("log-level") ?? "info"
        guard let level = Logger.Level(parsing: levelText) else {
            throw UsageError(
                message: "The value '\(levelText)' is invalid for '--log-level <level>': "
                    + "use debug, info, notice, warning or error"
            )
        }
        logLevel = level
        bounds.queueBytes = try arguments.int("queue-bytes", range: 4096...(1 << 30)) ?? Limits.defaultQueueBytes
        bounds.maxPayload = try arguments.int("max-payload", range: 0...(16 << 20)) ?? Limits.defaultMaxPayload
        bounds.maxNameBytes = try arguments.int("max-name-bytes", range: 1...Limits.maxNameBytes) ?? Limits.maxNameBytes
        bounds.maxSubscriptions =
            try arguments.int("max-subscriptions", range: 1...65535) ?? Limits.defaultMaxSubscriptions
        bounds.maxPatternCost =
            try arguments.int("max-pattern-cost", range: 1...1_000_000) ?? Limits.defaultMaxPatternCost
        bounds.maxNames = try arguments.int("max-names", range: 1...1_000_000) ?? Limits.defaultMaxNames
        bounds.maxRetained = try arguments.int("max-retained", range: 0...1_000_000) ?? Limits.defaultMaxRetained
        bounds.maxRetainedBytes =
            try arguments.int("max-retained-bytes", range: 0...(1 << 40)) ?? Limits.defaultMaxRetainedBytes
        bounds.maxWills = try arguments.int("max-wills", range: 0...1_000_000) ?? Limits.defaultMaxWills
        bounds.maxWillBytes = try arguments.int("max-will-bytes", range: 0...(1 << 40)) ?? Limits.defaultMaxWillBytes
        bounds.maxConnections =
            try arguments.int("max-connections", range: 1...1_000_000)
            ?? Self.defaultMaxConnections(descriptorLimit: descriptorLimit)
        maxIncompleteConnections =
            try arguments.int("max-incomplete-connections", range: 1...1_000_000)
            ?? Self.defaultMaxIncompleteConnections
        helloTimeoutMilliseconds =
            try arguments.int("hello-timeout-ms", range: 10...3_600_000) ?? Self.defaultHelloTimeoutMilliseconds
        bounds.maxQueuedBytes =
            try arguments.int("max-queued-bytes", range: 65536...(1 << 40)) ?? Limits.defaultMaxQueuedBytes
        sendBatching = !arguments.flag("no-send-batching")
        plugins = !arguments.flag("no-plugins")
        explicitStatePath = arguments.value("state-file")
        keepsState = !arguments.flag("no-state")
        coalesceNanoseconds = UInt64(try arguments.int("coalesce-us", range: 0...1000) ?? 20) * 1000
        let versions = Int(ProtocolVersion.supported.lowerBound)...Int(ProtocolVersion.supported.upperBound)
        maxProtocolVersion = UInt16(try arguments.int("max-protocol-version", range: versions) ?? versions.upperBound)
    }
}
