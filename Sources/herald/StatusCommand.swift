import Herald
import HeraldCommandLine

/// `herald status [--json]`: prints the daemon's counters.
struct StatusCommand: Subcommand {
    static let spec = CommandSpec(
        name: "herald status",
        abstract: "Show the daemon's process id, uptime, connections, subscriptions, retained names and counters.",
        options: [
            OptionSpec(long: "json", help: "Print one JSON object instead of aligned lines."),
            CommonOptions.socket,
        ]
    )

    /// Whether to print JSON.
    var json: Bool
    /// The `--socket` value.
    var socket: String?

    init(_ arguments: ParsedArguments) throws(UsageError) {
        json = arguments.flag("json")
        socket = arguments.value("socket")
    }

    func run() async throws(CommandFailure) {
        let status = try await Daemon.ask(socket: socket) { herald throws(HeraldError) in try await herald.status() }
        Terminal.writeStdout(Self.report(status, socketPath: Daemon.socketPath(explicit: socket), json: json))
    }

    /// The report: `key: value` lines with the values aligned, or one JSON object on one line.
    ///
    /// JSON has `socket`, `pid`, `startTime` (ISO 8601), `uptimeSeconds` (with milliseconds), `connections`,
    /// `subscriptions`, `retained`, `posted`, `delivered` and `dropped`. The counts include this connection.
    static func report(_ status: HeraldStatus, socketPath: String, json: Bool) -> String {
        let (seconds, attoseconds) = status.uptime.components
        let uptimeMilliseconds = UInt64(max(0, seconds)) * 1_000 + UInt64(max(0, attoseconds)) / 1_000_000_000_000_000
        let counters: [(key: String, value: String)] = [
            ("connections", String(status.connections)),
            ("subscriptions", String(status.subscriptions)),
            ("retained", String(status.retained)),
            ("posted", String(status.posted)),
            ("delivered", String(status.delivered)),
            ("dropped", String(status.dropped)),
        ]
        if json {
            let millisecondDigits = String(uptimeMilliseconds % 1_000)
            let uptime =
                "\(uptimeMilliseconds / 1_000)."
                + String(repeating: "0", count: 3 - millisecondDigits.count) + millisecondDigits
            return OutputFormat.object(
                [
                    ("socket", OutputFormat.quoted(socketPath)),
                    ("pid", String(status.pid)),
                    (
                        "startTime",
                        OutputFormat.quoted(OutputFormat.timestamp(nanoseconds: status.startTimeNanoseconds))
                    ),
                    ("uptimeSeconds", uptime),
                ] + counters
            ) + "\n"
        }
        let lines: [(key: String, value: String)] =
            [
                ("socket", socketPath),
                ("pid", String(status.pid)),
                ("started", OutputFormat.timestamp(nanoseconds: status.startTimeNanoseconds)),
                ("uptime", OutputFormat.uptime(seconds: uptimeMilliseconds / 1_000)),
            ] + counters
        let width = lines.map(\.key.count).max() ?? 0
        return lines.map { line in
            line.key + ":" + String(repeating: " ", count: width - line.key.count + 1) + line.value + "\n"
        }.joined()
    }
}
