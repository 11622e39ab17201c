import HeraldArguments
import HeraldWire

/// `herald observe PATTERN... [--json] [--count N] [--timeout SECONDS] [--ready]`: prints notifications as they
/// are posted.
struct ObserveCommand: Subcommand {
    static let spec = CommandSpec(
        name: "herald observe",
        abstract: "Print notifications whose names match the patterns, as they are posted.",
        discussion: """
            Each pattern is a name whose segments may be '*' (exactly one segment) or end in '**' (one or more \
            segments): session.*, build.**, **. Retained values of matching names print first, marked [retained]. \
            A post matching several patterns prints once. Lines are printed as they arrive, one per notification.

            Without --count, herald observes until interrupted (exit 130), until --timeout passes (exit 0), or \
            until heraldd goes away (exit 69). With --count, --timeout passing before N notifications is exit 124.
            """,
        arguments: [
            PositionalSpec(
                name: "patterns",
                help: "The patterns to observe, e.g. session.* or build.**.",
                arity: .oneOrMore
            )
        ],
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

    /// What to subscribe to and how to print it.
    var observation: Observation
    /// The `--timeout` value as typed, for the message.
    var timeoutText: String?

    init(_ arguments: ParsedArguments) throws(UsageError) {
        var patterns: [Pattern] = []
        for text in arguments.positional("patterns") {
            patterns.append(try CommonOptions.pattern(text))
        }
        let count = try arguments.int("count")
        if let count, count < 1 {
            throw UsageError(message: "The value '\(count)' is invalid for '--count <n>': must be at least 1")
        }
        observation = Observation(
            patterns: patterns,
            style: arguments.flag("json") ? .json : .human,
            limit: count,
            timeout: try CommonOptions.timeout(arguments),
            announcesReady: arguments.flag("ready"),
            includesRetained: true,
            socket: arguments.value("socket")
        )
        timeoutText = arguments.value("timeout")
    }

    func run() async throws(CommandFailure) {
        let (end, printed) = try await observation.run()
        switch end {
        case .limitReached, .outputClosed:
            return
        case .timedOut:
            // Without --count the timeout is how long to observe, so reaching it is the normal end.
            guard let limit = observation.limit, printed < limit else { return }
            throw .timedOut(
                "timed out after \(timeoutText ?? "?") seconds with \(printed) of \(limit) notifications"
            )
        case .daemonWentAway(let reason):
            throw CommandFailure(status: .unavailable, message: "heraldd went away: \(reason)")
        }
    }
}
