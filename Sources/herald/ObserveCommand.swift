import Herald
import HeraldCommandLine

/// `herald observe PATTERN... [--json] [--count N] [--timeout SECONDS] [--ready] [--overflow POLICY]
/// [--reconnect] [--will NAME ...]`: prints notifications as they are posted.
struct ObserveCommand: Subcommand {
    static let spec = CommandSpec(
        name: "herald observe",
        abstract: "Print notifications whose names match the patterns, as they are posted.",
        discussion: """
            Each pattern is a name whose segments may be '*' (exactly one segment) or end in '**' (one or more \
            segments): session.*, build.**, **. Retained values of matching names print first, marked [retained]. \
            A post matching several patterns prints once. Lines are printed as they arrive, one per notification.

            Without --count, herald observes until interrupted (exit 130), until --timeout passes (exit 0), or \
            until heraldd goes away (exit 69; with --reconnect it waits for heraldd to come back and prints a \
            reconnected notice instead). With --count, --timeout passing before N notifications is exit 124.

            When this process reads too slowly, heraldd drops the oldest notifications and says how many \
            (--overflow drop-oldest), keeps the newest per name (coalesce), or disconnects it (disconnect, exit 69).

            --will registers a last will: heraldd posts it if this process dies without closing its connection \
            (killed, crashed), after --will-delay seconds. Interrupting herald closes the connection, and then \
            the will is not posted.
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
            OptionSpec(
                long: "overflow",
                valueName: "policy",
                help: "What heraldd does when this process reads too slowly: drop-oldest, coalesce or disconnect.",
                defaultDescription: "drop-oldest"
            ),
            OptionSpec(long: "reconnect", help: "When heraldd goes away, wait for it to come back and go on."),
            OptionSpec(long: "will", valueName: "name", help: "A name for heraldd to post if this process dies."),
            OptionSpec(long: "will-json", valueName: "json", help: "The will's payload, a JSON object (default {})."),
            OptionSpec(long: "will-retain", help: "The will also sets the name's retained value."),
            OptionSpec(
                long: "will-delay",
                valueName: "seconds",
                help: "How long heraldd waits after the connection ends before posting the will.",
                defaultDescription: "0"
            ),
            CommonOptions.socket,
        ]
    )

    /// What to subscribe to and how to print it.
    var observation: Observation
    /// The `--timeout` value as typed, for the message.
    var timeoutText: String?

    init(_ arguments: ParsedArguments) throws(UsageError) {
        var patterns: [HeraldPattern] = []
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
        let policies = Herald.OverflowPolicy.allCases
        let overflow = try arguments.choice("overflow", of: policies.map(\.description))
        observation.overflow = overflow.flatMap(Herald.OverflowPolicy.init(parsing:)) ?? .dropOldest
        observation.reconnects = arguments.flag("reconnect")
        observation.will = try Self.will(arguments)
        timeoutText = arguments.value("timeout")
    }

    /// The `--will` options as a will, or nil without `--will`.
    ///
    /// - Throws: `UsageError` for an invalid name, a payload that is not a JSON object, a delay out of range, or will
    ///   options without `--will`.
    static func will(_ arguments: ParsedArguments) throws(UsageError) -> Herald.Will? {
        guard let name = arguments.value("will") else {
            for option in ["will-json", "will-delay"] where arguments.value(option) != nil {
                throw UsageError(message: "--\(option) needs --will <name>")
            }
            if arguments.flag("will-retain") { throw UsageError(message: "--will-retain needs --will <name>") }
            return nil
        }
        try CommonOptions.validateName(name, postable: true)
        var payload = JSONValue.encodeObject([:])
        if let text = arguments.value("will-json") {
            guard case .object(let object)? = JSONValue.decode(Array(text.utf8)) else {
                throw UsageError(message: "The value '\(text)' is invalid for '--will-json <json>': not a JSON object")
            }
            payload = JSONValue.encodeObject(object)
        }
        let delay = try arguments.double("will-delay", range: 0...3600) ?? 0
        return Herald.Will(name: name, payload: payload, retain: arguments.flag("will-retain"), delay: .seconds(delay))
    }

    func run() async throws(CommandFailure) {
        try await observation.runToCompletion(timeoutText: timeoutText)
    }
}
