/// What a command line asks an executable to do, worked out without running anything.
public enum Invocation<Command> {
    /// Print this text on stdout and exit 0: help or the version.
    case show(String)
    /// Print this text on stderr and exit 64: the error and a usage hint.
    case usageError(String)
    /// Run `command`; `spec` words its errors.
    case run(Command, spec: CommandSpec)

    /// Answers help, the version and usage errors the way every Herald executable does, ending the process: help
    /// and the version on stdout with 0, a usage error on stderr with 64.
    ///
    /// - Returns: the command to run and its spec, when the command line asks to run one.
    public func commandOrExit() -> (command: Command, spec: CommandSpec) {
        switch self {
        case .show(let text):
            Terminal.writeStdout(text)
            Terminal.exit(.success)
        case .usageError(let text):
            Terminal.writeStderr(text)
            Terminal.exit(.usage)
        case .run(let command, let spec):
            return (command, spec)
        }
    }
}
