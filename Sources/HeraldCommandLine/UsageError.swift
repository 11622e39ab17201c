/// A command line that doesn't match its command's spec.
///
/// The message follows swift-argument-parser's wording, e.g. `Unknown option '--foo'`. Show it with
/// `CommandSpec.errorText(_:)` on stderr and exit with `ExitCode.usage`.
public struct UsageError: Error, Sendable, CustomStringConvertible, Equatable {
    /// What was wrong, in one line, without the `Error: ` prefix.
    public var message: String

    /// Creates a usage error with the given message.
    ///
    /// - Parameter message: What was wrong, without the `Error: ` prefix.
    public init(message: String) {
        self.message = message
    }

    /// The message.
    public var description: String { message }
}
