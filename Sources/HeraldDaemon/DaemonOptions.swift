import HeraldArguments
import HeraldBroker
import HeraldPosix
import HeraldWire

/// heraldd's command line, parsed and checked.
struct DaemonOptions {
    var socketPath: String
    /// Whether the path came from `--socket` (for messages only: the directory rules are the same).
    var socketIsExplicit: Bool
    var logLevel: Logger.Level
    /// The broker's bounds, from their flags.
    var bounds = Broker.Bounds()
    /// Whether a turn's output goes out in one io_uring batch when the kernel allows it (`--no-send-batching`
    /// turns it off: then each connection gets its own send, as on a kernel without io_uring).
    var sendBatching = true
    /// Under load (see `Daemon.waitForEvents`), how long heraldd lets input gather before it waits for more
    /// (`--coalesce-us`); 0 turns it off.
    var coalesceNanoseconds: UInt64 = 20_000

    static let version = "0.1.0"

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
                long: "max-connections",
                valueName: "count",
                help: "Connections one uid may hold at once.",
                defaultDescription: "\(Limits.defaultMaxConnections)"
            ),
            OptionSpec(
                long: "max-queued-bytes",
                valueName: "bytes",
                help: "Bound of the frames queued for all connections together; past it heraldd stops reading.",
                defaultDescription: "\(Limits.defaultMaxQueuedBytes)"
            ),
            OptionSpec(
                long: "no-send-batching",
                help: "Write each connection with its own send(2), not all of a turn's in one io_uring batch."
            ),
            OptionSpec(
                long: "coalesce-us",
                valueName: "microseconds",
                help: "Under load, let input gather this long before waiting for more; 0 turns it off.",
                defaultDescription: "20"
            ),
            OptionSpec(long: "version", help: "Show the version."),
        ]
    )

    /// Builds the options from parsed arguments.
    ///
    /// - Throws: `UsageError` for a value out of range.
    init(_ arguments: ParsedArguments) throws(UsageError) {
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
        bounds.maxConnections =
            try arguments.int("max-connections", range: 1...1_000_000) ?? Limits.defaultMaxConnections
        bounds.maxQueuedBytes =
            try arguments.int("max-queued-bytes", range: 65536...(1 << 40)) ?? Limits.defaultMaxQueuedBytes
        sendBatching = !arguments.flag("no-send-batching")
        coalesceNanoseconds = UInt64(try arguments.int("coalesce-us", range: 0...1000) ?? 20) * 1000
    }
}
