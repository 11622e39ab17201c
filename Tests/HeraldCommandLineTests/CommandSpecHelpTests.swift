import HeraldCommandLine
import Testing

@Suite struct CommandSpecHelpTests {
    /// The top-level `herald` command: a discussion, a version flag, a long label, help text that wraps, and
    /// subcommands.
    static let herald = CommandSpec(
        name: "herald",
        abstract: "Talk to the Herald daemon.",
        discussion: """
            Every subcommand connects to the daemon's socket, found in $HERALD_SOCKET or else under \
            $XDG_RUNTIME_DIR/herald, and exits with status 69 when the daemon is unavailable.
            """,
        options: [
            OptionSpec(long: "version", help: "Show the version."),
            OptionSpec(
                long: "connect-timeout",
                short: "t",
                valueName: "MILLISECONDS",
                help: "How long to wait for the daemon to accept the connection before giving up and exiting with "
                    + "status 124.",
                defaultDescription: "1000"
            ),
        ],
        subcommands: [
            Fixtures.post,
            CommandSpec(name: "herald listen", abstract: "Print notifications as they arrive."),
        ]
    )

    @Test func rendersHelpInArgumentParserLayout() {
        let expected = """
            OVERVIEW: Post a notification to every subscriber of its name.

            USAGE: herald post <name> [<pairs> ...] [--json <json>] [--retain] [--socket <path>]

            ARGUMENTS:
              <name>                  The notification name, e.g. session.willResignActive.
              <pairs>                 KEY=VALUE pairs that make the JSON userInfo.

            OPTIONS:
              --json <json>           A JSON object to send as the payload.
              --retain                Also store the payload as the name's retained value.
              -s, --socket <path>     The daemon's socket. (default: $HERALD_SOCKET)
              -h, --help              Show help information.

            """
        #expect(Fixtures.post.helpText == expected)
    }

    @Test func wrapsLongTextAndListsSubcommands() {
        let expected = """
            OVERVIEW: Talk to the Herald daemon.

            Every subcommand connects to the daemon's socket, found in $HERALD_SOCKET or
            else under $XDG_RUNTIME_DIR/herald, and exits with status 69 when the daemon is
            unavailable.

            USAGE: herald [--connect-timeout <milliseconds>] <subcommand>

            OPTIONS:
              --version               Show the version.
              -t, --connect-timeout <milliseconds>
                                      How long to wait for the daemon to accept the
                                      connection before giving up and exiting with status
                                      124. (default: 1000)
              -h, --help              Show help information.

            SUBCOMMANDS:
              post                    Post a notification to every subscriber of its name.
              listen                  Print notifications as they arrive.

              See 'herald <subcommand> --help' for detailed help.

            """
        #expect(Self.herald.helpText == expected)
    }

    /// The usage line is exempt: swift-argument-parser never wraps it either.
    @Test func keepsEveryHelpLineButUsageWithinEightyColumns() {
        for spec in [Fixtures.post, Fixtures.bench, Fixtures.copy, Self.herald] {
            let lines = spec.helpText.split(separator: "\n", omittingEmptySubsequences: false)
            #expect(lines.allSatisfy { $0.count <= 80 || $0.hasPrefix("USAGE: ") }, "\(spec.name)")
        }
    }

    @Test func rendersAMinimalCommand() {
        let spec = CommandSpec(name: "heraldd")
        #expect(spec.helpText == "USAGE: heraldd\n\nOPTIONS:\n  -h, --help              Show help information.\n")
    }

    @Test func usesTheUsageOverrideEverywhere() {
        let spec = CommandSpec(
            name: "herald-chat",
            abstract: "Chat.",
            usage: "herald-chat [<options>] <room>\nherald-chat --list"
        )
        #expect(spec.usageLine == "herald-chat [<options>] <room>\nherald-chat --list")
        #expect(spec.helpText.contains("USAGE: herald-chat [<options>] <room>\n       herald-chat --list\n\n"))
        #expect(
            spec.errorText(UsageError(message: "x")).contains(
                "Usage: herald-chat [<options>] <room>\n       herald-chat --list\n"
            )
        )
    }

    /// `n` optional flags named `f1`…`fn`.
    private static func flags(_ count: Int) -> [OptionSpec] {
        (0..<count).map { OptionSpec(long: "f\($0 + 1)") }
    }

    @Test(arguments: [
        (CommandSpec(name: "a"), "a"),
        (CommandSpec(name: "a", subcommands: [CommandSpec(name: "a b")]), "a <subcommand>"),
        (
            CommandSpec(
                name: "a",
                arguments: [
                    PositionalSpec(name: "one"), PositionalSpec(name: "two", arity: .optional),
                    PositionalSpec(name: "three", arity: .zeroOrMore), PositionalSpec(name: "four", arity: .oneOrMore),
                ]
            ),
            "a <one> [<two>] [<three> ...] <four> ..."
        ),
        (
            CommandSpec(
                name: "a",
                options: [
                    OptionSpec(long: "tag", short: "t", valueName: "Tag", repeatable: true),
                    OptionSpec(long: "verbose", short: "v", repeatable: true),
                    OptionSpec(long: "version"),
                ]
            ),
            "a [--tag <tag> ...] [--verbose ...]"
        ),
        (CommandSpec(name: "a", options: flags(12)), "a " + (1...12).map { "[--f\($0)]" }.joined(separator: " ")),
        // Past 12, optional options collapse as in swift-argument-parser.
        (CommandSpec(name: "a", options: flags(13)), "a <options>"),
        (CommandSpec(name: "a", arguments: [PositionalSpec(name: "x")], options: flags(12)), "a [<options>] <x>"),
    ])
    func generatesTheUsageLine(spec: CommandSpec, expected: String) {
        #expect(spec.usageLine == expected)
    }

    @Test func formatsUsageErrorsForStandardError() throws {
        let error = try #require(throws: UsageError.self) { try Fixtures.post.parse(["ready", "--bogus"]) }
        #expect(
            Fixtures.post.errorText(error) == """
                Error: Unknown option '--bogus'
                Usage: herald post <name> [<pairs> ...] [--json <json>] [--retain] [--socket <path>]
                  See 'herald post --help' for more information.

                """
        )
    }

    @Test func describesUsageErrorsByTheirMessage() {
        let error = UsageError(message: "Missing expected argument '<name>'")
        #expect(error.description == "Missing expected argument '<name>'")
        #expect("\(error)" == "Missing expected argument '<name>'")
    }

    @Test(arguments: [
        (ExitCode.success, Int32(0)), (.failure, 1), (.usage, 64), (.unavailable, 69), (.timeout, 124),
        (.interrupted, 130),
    ])
    func usesConventionalExitStatuses(code: ExitCode, status: Int32) {
        #expect(code.rawValue == status)
    }
}
