import HeraldCommandLine

/// One of `herald`'s subcommands: its spec, the values it took from the command line, and what it does.
protocol Subcommand: Sendable {
    /// The command line the subcommand accepts and its help.
    static var spec: CommandSpec { get }

    /// Takes the subcommand's values from a parsed command line and checks them without touching the daemon.
    ///
    /// - Throws: `UsageError` for values that parsed but are invalid: a malformed name or pattern, a bad `--json`.
    init(_ arguments: ParsedArguments) throws(UsageError)

    /// Does the work.
    ///
    /// Returning means success (exit 0). Output goes to stdout as it is produced; errors are thrown, and `main`
    /// prints them on stderr and exits with their status.
    func run() async throws(CommandFailure)
}
