import Herald
import HeraldCommandLine

/// The options several subcommands share, and the checks they run on names, patterns and numbers before connecting.
enum CommonOptions {
    /// `-s, --socket PATH`, which every subcommand takes.
    static let socket = OptionSpec(
        long: "socket",
        short: "s",
        valueName: "PATH",
        help: "The daemon's socket.",
        defaultDescription: "$HERALD_SOCKET, else $XDG_RUNTIME_DIR/herald/socket, else /tmp/herald-$UID/socket"
    )

    /// `--json` as a flag: print JSON lines instead of human ones.
    static let json = OptionSpec(long: "json", help: "Print one JSON object per line instead of text.")

    /// `--ready`: say on stderr when the subscription is live.
    static let ready = OptionSpec(
        long: "ready",
        help: "Print 'ready' on stderr once the daemon has acknowledged the subscription, so a script knows that "
            + "every post from then on will be seen."
    )

    /// The longest `--timeout` accepted, a year: long enough for anything, short enough for `Duration`.
    static let maximumTimeout = 31_536_000.0

    /// Checks that `text` is a valid notification name.
    ///
    /// - Parameter postable: Also reject the reserved `herald.` names, which the daemon refuses to take posts to.
    /// - Throws: `UsageError` with the library's reason, e.g. `invalid name "a..b": empty segment at byte 2`.
    static func validateName(_ text: String, postable: Bool = false) throws(UsageError) {
        do throws(HeraldError) {
            try Herald.validate(name: text, forPosting: postable)
        } catch {
            throw UsageError(message: error.message)
        }
    }

    /// Parses and checks a subscription pattern.
    ///
    /// - Throws: `UsageError` with the library's reason, e.g. `invalid pattern "a.**.b": '**' is allowed only as
    ///   the last segment`.
    static func pattern(_ text: String) throws(UsageError) -> HeraldPattern {
        do throws(HeraldError) {
            return try HeraldPattern(text)
        } catch {
            throw UsageError(message: error.message)
        }
    }

    /// Reads `--timeout SECONDS`, which may have a fraction (`0.5`).
    ///
    /// - Returns: The timeout, or `nil` when the option is absent.
    /// - Throws: `UsageError` for a value that isn't a number from 0 to a year.
    static func timeout(_ arguments: ParsedArguments) throws(UsageError) -> Duration? {
        guard let seconds = try arguments.double("timeout", range: 0...maximumTimeout) else { return nil }
        return .seconds(seconds)
    }

    /// `--timeout SECONDS` with the subcommand's own description of what runs out.
    static func timeoutOption(help: String) -> OptionSpec {
        OptionSpec(long: "timeout", valueName: "SECONDS", help: help)
    }
}
