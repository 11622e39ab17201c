import Herald
import HeraldArguments

/// Why a subcommand failed: the exit status, and the message `main` prints on stderr.
struct CommandFailure: Error, Sendable {
    /// The process's exit status.
    var status: ExitCode
    /// The message without the `Error: ` prefix, or `nil` to exit without printing anything.
    var message: String?
    /// Whether the usage line and the `--help` hint follow the message, as for a command line that doesn't fit.
    var showsUsage: Bool = false

    /// A command line that parsed but makes no sense (`--json '[1]'`, an invalid name): exit 64 with usage.
    static func usage(_ error: UsageError) -> CommandFailure {
        CommandFailure(status: .usage, message: error.message, showsUsage: true)
    }

    /// A failure with a message and exit status 1.
    static func failure(_ message: String) -> CommandFailure {
        CommandFailure(status: .failure, message: message)
    }

    /// The command gave up waiting: exit 124.
    static func timedOut(_ message: String) -> CommandFailure {
        CommandFailure(status: .timeout, message: message)
    }

    /// What to print on stderr for this failure, ending with a newline, or an empty string.
    ///
    /// - Parameter spec: The subcommand's spec, for the usage line.
    func text(for spec: CommandSpec) -> String {
        guard let message else { return "" }
        if showsUsage {
            return spec.errorText(UsageError(message: message))
        }
        return "Error: \(message)\n"
    }
}

extension CommandFailure {
    /// Maps a library error to an exit status.
    ///
    /// A daemon that can't be reached, goes away or stops answering is `unavailable` (69), whatever the library
    /// calls it, because a script reacts to all three the same way: start or restart heraldd. Names and patterns are
    /// checked before connecting, so the daemon rejecting one is a usage error that slipped through.
    init(_ error: HeraldError) {
        switch error.code {
        case .daemonUnavailable, .disconnected, .timedOut:
            self.init(status: .unavailable, message: error.message)
        case .invalidName, .invalidPattern, .reservedName:
            self.init(status: .usage, message: error.message, showsUsage: true)
        default:
            self.init(status: .failure, message: error.message)
        }
    }
}
