import Herald
import HeraldCommandLine

/// `herald monitor [--json] [--count N] [--timeout SECONDS] [--ready]`: every notification of the session,
/// read-only.
struct MonitorCommand: Subcommand {
    static let spec = CommandSpec(
        name: "herald monitor",
        abstract: "Print every notification posted in the session, read-only.",
        discussion: """
            Only the session's owner may monitor: heraldd refuses anyone else, root included (exit 1). A monitor \
            sees every post as it is made; it does not see retained values (use 'herald get' or 'herald names').
            """,
        options: [
            CommonOptions.json,
            OptionSpec(long: "count", valueName: "N", help: "Exit 0 after printing N notifications."),
            CommonOptions.timeoutOption(
                help: "Stop after this many seconds (fractions allowed): exit 0, or 124 if --count was not reached."
            ),
            CommonOptions.ready,
            CommonOptions.socket,
        ]
    )

    var observation: Observation
    var timeoutText: String?

    init(_ arguments: ParsedArguments) throws(UsageError) {
        let count = try arguments.int("count")
        if let count, count < 1 {
            throw UsageError(message: "The value '\(count)' is invalid for '--count <n>': must be at least 1")
        }
        observation = Observation(
            patterns: [try! HeraldPattern("**")],
            style: arguments.flag("json") ? .json : .human,
            limit: count,
            timeout: try CommonOptions.timeout(arguments),
            announcesReady: arguments.flag("ready"),
            includesRetained: false,
            socket: arguments.value("socket")
        )
        observation.monitors = true
        timeoutText = arguments.value("timeout")
    }

    func run() async throws(CommandFailure) {
        try await observation.runToCompletion(timeoutText: timeoutText)
    }
}
