extension CommandSpec {
    /// Works out what a command line asks of an executable with this spec: `--help` and `--version` are answered
    /// with text to show, a usage error with its text and the usage, and anything else is handed to `options` to
    /// build the executable's options.
    ///
    /// - Parameters:
    ///   - arguments: The command line after the program name.
    ///   - version: What `--version` prints, e.g. `heraldd 0.1.0`; the spec must declare a `version` flag.
    ///   - options: Builds the options from the parsed arguments; a `UsageError` it throws is a usage error.
    public func invocation<Options>(
        _ arguments: [String],
        version: String,
        options: (ParsedArguments) throws(UsageError) -> Options
    ) -> Invocation<Options> {
        do throws(UsageError) {
            switch try parse(arguments) {
            case .help:
                return .show(helpText)
            case .version:
                return .show(version + "\n")
            case .run(let parsed):
                return .run(try options(parsed), spec: self)
            }
        } catch {
            return .usageError(errorText(error))
        }
    }
}
