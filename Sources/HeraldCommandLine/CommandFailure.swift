/// Why a command failed: the exit status, and the message ``runMain(_:run:)`` prints on stderr.
public struct CommandFailure: Error, Sendable {
    /// The process's exit status.
    public var status: ExitCode
    /// The message without the `Error: ` prefix, or `nil` to exit without printing anything.
    public var message: String?
    /// Whether the usage line and the `--help` hint follow the message, as for a command line that doesn't fit.
    public var showsUsage: Bool

    /// Creates a failure.
    ///
    /// - Parameters:
    ///   - status: the exit status.
    ///   - message: what failed and why, without `Error: `; nil prints nothing.
    ///   - showsUsage: whether the usage and the `--help` hint follow the message.
    public init(status: ExitCode, message: String?, showsUsage: Bool = false) {
        self.status = status
        self.message = message
        self.showsUsage = showsUsage
    }

    /// A command line that parsed but makes no sense (`--json '[1]'`, an invalid name): exit 64 with usage.
    public static func usage(_ error: UsageError) -> CommandFailure {
        CommandFailure(status: .usage, message: error.message, showsUsage: true)
    }

    /// A failure with a message and exit status 1.
    public static func failure(_ message: String) -> CommandFailure {
        CommandFailure(status: .failure, message: message)
    }

    /// The command gave up waiting: exit 124.
    public static func timedOut(_ message: String) -> CommandFailure {
        CommandFailure(status: .timeout, message: message)
    }

    /// What to print on stderr for this failure, ending with a newline, or an empty string.
    ///
    /// - Parameter spec: The command's spec, for the usage line.
    public func text(for spec: CommandSpec) -> String {
        guard let message else { return "" }
        if showsUsage {
            return spec.errorText(UsageError(message: message))
        }
        return "Error: \(message)\n"
    }
}
