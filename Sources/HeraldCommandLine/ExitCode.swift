/// The process exit statuses Herald's executables use.
///
/// The first three follow swift-argument-parser (64 is `EX_USAGE` from sysexits.h); 69 (`EX_UNAVAILABLE`)
/// and 124 (as timeout(1) uses) are Herald's, and 130 and 143 are the shell's 128 + SIGINT and 128 + SIGTERM.
public enum ExitCode: Int32, Sendable {
    /// The command did what was asked.
    case success = 0
    /// The command failed for a reason other than those below.
    case failure = 1
    /// The command line was malformed; the error and usage went to stderr.
    case usage = 64
    /// The daemon could not be reached.
    case unavailable = 69
    /// The command gave up waiting.
    case timeout = 124
    /// The command was interrupted by SIGINT.
    case interrupted = 130
    /// The command was stopped by SIGTERM.
    case terminated = 143

    /// The status a shell reports for a process ended by `signal`: 128 plus its number.
    ///
    /// - Returns: nil for a signal other than the ``Signals/stopping`` ones.
    public init?(signal: Int32) {
        self.init(rawValue: 128 + signal)
        guard self == .interrupted || self == .terminated else { return nil }
    }
}
