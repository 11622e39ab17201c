import HeraldCommandLine

/// Specs shared by the tests, shaped like the commands the executables declare.
enum Fixtures {
    /// `herald post`, as in the help example the executables are written against.
    static let post = CommandSpec(
        name: "herald post",
        abstract: "Post a notification to every subscriber of its name.",
        arguments: [
            PositionalSpec(name: "name", help: "The notification name, e.g. session.willResignActive."),
            PositionalSpec(name: "pairs", help: "KEY=VALUE pairs that make the JSON userInfo.", arity: .zeroOrMore),
        ],
        options: [
            OptionSpec(long: "json", valueName: "JSON", help: "A JSON object to send as the payload."),
            OptionSpec(long: "retain", help: "Also store the payload as the name's retained value."),
            OptionSpec(
                long: "socket",
                short: "s",
                valueName: "PATH",
                help: "The daemon's socket.",
                defaultDescription: "$HERALD_SOCKET"
            ),
        ]
    )

    /// A command with every kind of option, for the typed accessors and repetition rules.
    static let bench = CommandSpec(
        name: "herald-bench",
        abstract: "Measure the daemon.",
        options: [
            OptionSpec(long: "count", short: "c", valueName: "count", help: "How many posts."),
            OptionSpec(long: "timeout", valueName: "seconds", help: "How long to wait."),
            OptionSpec(long: "format", valueName: "format", help: "The report format."),
            OptionSpec(long: "tag", short: "t", valueName: "tag", help: "A label.", repeatable: true),
            OptionSpec(long: "verbose", short: "v", help: "Say more."),
            OptionSpec(long: "version", help: "Show the version."),
        ]
    )

    /// A command whose positionals cover every arity, to test how words are shared among them.
    static let copy = CommandSpec(
        name: "copy",
        arguments: [
            PositionalSpec(name: "sources", arity: .oneOrMore),
            PositionalSpec(name: "destination"),
            PositionalSpec(name: "mode", arity: .optional),
        ]
    )
}
