import HeraldCommandLine

/// `herald wait NAME [--timeout SECONDS] [--json] [--ready]`: waits for the next post to one name.
struct WaitCommand: Subcommand {
    static let spec = CommandSpec(
        name: "herald wait",
        abstract: "Wait for the next post to a name, print it and exit.",
        discussion: """
            Only a post made after herald subscribed counts: the name's retained value, if any, is not printed. \
            The line is printed as by 'herald observe'. Exit 0 after the post, 124 if --timeout passes first, 69 \
            if heraldd goes away.
            """,
        arguments: [PositionalSpec(name: "name", help: "The notification name to wait for.")],
        options: [
            CommonOptions.timeoutOption(help: "Give up after this many seconds (fractions allowed) and exit 124."),
            CommonOptions.json,
            CommonOptions.ready,
            CommonOptions.socket,
        ]
    )

    /// The name waited for.
    var name: String
    /// The subscription and how to print the post.
    var observation: Observation
    /// The `--timeout` value as typed, for the message.
    var timeoutText: String?

    init(_ arguments: ParsedArguments) throws(UsageError) {
        name = arguments.positional("name")[0]
        try CommonOptions.validateName(name)
        observation = Observation(
            // A valid name is a pattern that matches exactly itself.
            patterns: [try CommonOptions.pattern(name)],
            style: arguments.flag("json") ? .json : .human,
            limit: 1,
            timeout: try CommonOptions.timeout(arguments),
            announcesReady: arguments.flag("ready"),
            includesRetained: false,
            socket: arguments.value("socket")
        )
        timeoutText = arguments.value("timeout")
    }

    func run() async throws(CommandFailure) {
        let (end, _) = try await observation.run()
        switch end {
        case .limitReached, .outputClosed:
            return
        case .timedOut:
            throw .timedOut("timed out after \(timeoutText ?? "?") seconds waiting for a post to \(name)")
        case .daemonWentAway(let reason):
            throw CommandFailure(status: .unavailable, message: "heraldd went away: \(reason)")
        }
    }
}
