import HeraldCommandLine

/// herald-bench's command line, parsed and checked.
struct BenchOptions {
    enum Mode {
        /// Run these workloads, one JSON line each.
        case workloads([String])
        /// Run these microbenchmark groups: `codec`, `matcher`.
        case micro([String])
    }

    var mode: Mode
    var socketPath: String?
    /// Where the subscriber connections go when not to `socketPath`: another daemon, bridged to the first.
    var subscriberSocketPath: String?
    var brokerPID: Int32?
    var label: String
    var duration: Double
    var messages: Int?
    /// Messages per second over all publishers, in place of the workload's own rate.
    var rate: Double?
    var timeout: Double?
    var drainMilliseconds: Int
    /// Posting tasks (P), in place of the workload's one.
    var publishers: Int?
    /// The connections the posting tasks share.
    var publisherConnections: Int?
    /// Whether each `for await` runs on its Herald's reader thread (`Herald.taskExecutor`) or on the global pool.
    var consumersOnReaderThread: Bool
    /// Whether a subscriber connection follows its names in one stream or in one stream per name.
    var streamPerName: Bool
    /// Threads of a `Herald.ReaderGroup` that read every subscriber connection; nil: a reader thread each.
    var readerThreads: Int?
    /// Whether a publisher with a full window sleeps until woken (`--window-wait block`) or looks every 20 µs.
    var publisherBlocksOnWindow: Bool

    static let spec = CommandSpec(
        name: "herald-bench",
        abstract: "Measure heraldd through the Herald library with the workloads of shared/bench/peers.",
        discussion: """
            Runs the peers' harness workload, field for field, with Herald connections on both ends: P publisher \
            connections posting with post(_:payload:), M subscriber connections, each following its K names in one \
            notifications(matching:) stream (or, with --streams name, one stream per name), each stream consumed by \
            its own `for await` (on the connection's reader thread through Herald.taskExecutor, or with --consumers \
            pool in a plain Task). Prints one JSON line per workload with the harness's fields. Needs a running \
            heraldd. --micro measures the frame codec and the pattern matcher instead, without a daemon, and prints a \
            table.
            """,
        options: [
            OptionSpec(
                long: "workload",
                short: "w",
                valueName: "name",
                help: "fanout-1, fanout-10, fanout-100, latency or named."
            ),
            OptionSpec(long: "all", help: "Run the five workloads in the harness's order."),
            OptionSpec(long: "micro", valueName: "group", help: "codec, matcher or all: microbenchmarks, no daemon."),
            OptionSpec(long: "socket", short: "s", valueName: "path", help: "The daemon's socket."),
            OptionSpec(
                long: "subscriber-socket",
                valueName: "path",
                help: "Connect the subscribers to this daemon instead, e.g. one bridged to the publishers' daemon.",
                defaultDescription: "--socket"
            ),
            OptionSpec(
                long: "broker-pid",
                valueName: "pid",
                help: "The daemon's pid, for broker_cpu_pct.",
                defaultDescription: "the pid in WELCOME"
            ),
            OptionSpec(
                long: "label",
                valueName: "label",
                help: "The result's peer field.",
                defaultDescription: "herald-bench"
            ),
            OptionSpec(
                long: "duration",
                valueName: "seconds",
                help: "Seconds per throughput run; the latency run sends 10000 messages per second of it.",
                defaultDescription: "2"
            ),
            OptionSpec(long: "messages", valueName: "count", help: "Stop after this many messages in all."),
            OptionSpec(
                long: "publishers",
                valueName: "count",
                help: "Posting tasks (the harness's P), each with its share of the messages.",
                defaultDescription: "1"
            ),
            OptionSpec(
                long: "publisher-connections",
                valueName: "count",
                help: "Connections the posting tasks share, round-robin; --publishers for one each.",
                defaultDescription: "1"
            ),
            OptionSpec(
                long: "rate",
                valueName: "per-second",
                help: "Messages per second over all publishers; 0 sends as fast as the window allows.",
                defaultDescription: "the workload's"
            ),
            OptionSpec(
                long: "timeout",
                valueName: "seconds",
                help: "Abandon a run after this long.",
                defaultDescription: "duration + 30"
            ),
            OptionSpec(
                long: "drain-ms",
                valueName: "ms",
                help: "End a run after this long without a delivery once publishing is done.",
                defaultDescription: "2000"
            ),
            OptionSpec(
                long: "consumers",
                valueName: "where",
                help: "reader: each for-await prefers its Herald's taskExecutor; pool: a plain Task.",
                defaultDescription: "reader"
            ),
            OptionSpec(
                long: "streams",
                valueName: "per",
                help: """
                    connection: each subscriber connection follows its names in one stream, as the harness's \
                    subscriber reads each connection in one loop; name: one stream and one for-await per name.
                    """,
                defaultDescription: "connection"
            ),
            OptionSpec(
                long: "reader-threads",
                valueName: "count",
                help: """
                    Read the subscriber connections with a Herald.ReaderGroup of this many threads, as the harness's \
                    subscriber reads all of them with one epoll loop.
                    """,
                defaultDescription: "a reader thread per connection"
            ),
            OptionSpec(
                long: "window-wait",
                valueName: "how",
                help: """
                    sleep: a publisher whose window is full looks again every 20 µs, as the harness's bench.c does \
                    (compare.sh); block: it sleeps until the subscribers' deliveries wake it, as mosquitto_pub waits \
                    in poll for its PUBACKs (mqtt-bridge.sh).
                    """,
                defaultDescription: "sleep"
            ),
            OptionSpec(long: "version", help: "Show the version."),
        ]
    )

    /// Builds the options from parsed arguments.
    ///
    /// - Throws: `UsageError` for an unknown workload or group, a value out of range, or no mode at all.
    init(_ arguments: ParsedArguments) throws(UsageError) {
        let groups = ["codec", "matcher", "all"]
        if let group = try arguments.choice("micro", of: groups) {
            mode = .micro(group == "all" ? ["codec", "matcher"] : [group])
        } else if arguments.flag("all") {
            mode = .workloads(Workload.presetNames)
        } else if let name = try arguments.choice("workload", of: Workload.presetNames) {
            mode = .workloads([name])
        } else {
            throw UsageError(message: "Missing '--workload <name>', '--all' or '--micro <group>'")
        }
        socketPath = arguments.value("socket")
        subscriberSocketPath = arguments.value("subscriber-socket")
        brokerPID = try arguments.int("broker-pid", range: 1...Int(Int32.max)).map { Int32($0) }
        label = arguments.value("label") ?? "herald-bench"
        duration = try arguments.double("duration", range: 0.05...600) ?? 2
        messages = try arguments.int("messages", range: 1...Int(Int32.max))
        publishers = try arguments.int("publishers", range: 1...1000)
        publisherConnections = try arguments.int("publisher-connections", range: 1...1000)
        rate = try arguments.double("rate", range: 0...10_000_000)
        timeout = try arguments.double("timeout", range: 1...3600)
        drainMilliseconds = try arguments.int("drain-ms", range: 1...600_000) ?? 2000
        consumersOnReaderThread = (try arguments.choice("consumers", of: ["reader", "pool"]) ?? "reader") == "reader"
        streamPerName = (try arguments.choice("streams", of: ["connection", "name"]) ?? "connection") == "name"
        readerThreads = try arguments.int("reader-threads", range: 1...256)
        publisherBlocksOnWindow = (try arguments.choice("window-wait", of: ["sleep", "block"]) ?? "sleep") == "block"
    }

    /// The workload `name` as this command line shapes it.
    func workload(_ name: String) -> Workload {
        guard var workload = Workload.preset(name, duration: duration) else {
            preconditionFailure("\(name) is not a preset; the parser admits only presets")
        }
        if let messages { workload.messages = messages }
        if let rate { workload.rate = rate }
        if let publishers { workload.publishers = publishers }
        workload.publisherConnections = min(publisherConnections ?? 1, workload.publishers)
        return workload
    }
}
