/// What a command line asks for once parsed.
public enum ParseOutcome: Sendable {
    /// Run the command with these arguments.
    case run(ParsedArguments)
    /// Print `CommandSpec.helpText` on stdout and exit with `ExitCode.success`.
    case help
    /// Print the version on stdout and exit with `ExitCode.success`.
    case version
}
