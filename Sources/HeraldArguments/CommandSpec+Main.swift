extension CommandSpec {
    /// Parses an executable's command line the way every Herald executable does: `--help` and `--version` are
    /// answered on stdout and end the process with 0, a usage error is printed on stderr with the usage and ends it
    /// with 64, and anything else is handed to `options` to build the executable's options.
    ///
    /// - Parameters:
    ///   - arguments: The command line after the program name.
    ///   - version: What `--version` prints, e.g. `heraldd 0.1.0`.
    ///   - options: Builds the options from the parsed arguments; a `UsageError` it throws ends the process with 64.
    /// - Returns: The options, when the command line asks to run.
    public func parseOrExit<Options>(
        _ arguments: [String],
        version: String,
        options: (ParsedArguments) throws(UsageError) -> Options
    ) -> Options {
        do throws(UsageError) {
            switch try parse(arguments) {
            case .help:
                Terminal.writeStdout(helpText)
                Terminal.exit(.success)
            case .version:
                Terminal.writeStdout(version + "\n")
                Terminal.exit(.success)
            case .run(let parsed):
                return try options(parsed)
            }
        } catch {
            Terminal.writeStderr(errorText(error))
            Terminal.exit(.usage)
        }
    }
}
