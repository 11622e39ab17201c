/// Why a plugin file was refused: the line (when one line is to blame) and a reason a person can act on.
///
/// Its `description` is what the daemon logs and `herald plugins` shows: "line 4: unknown key 'Foo'".
public struct PluginFileError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The 1-based line at fault, or nil when the file as a whole is (a missing `Exec=`, a bad file name).
    public var line: Int?
    /// What is wrong, without the line number.
    public var reason: String

    /// Creates an error for `line` (nil for the whole file).
    public init(line: Int?, _ reason: String) {
        self.line = line
        self.reason = reason
    }

    /// "line N: reason", or the reason alone when no line is to blame.
    public var description: String {
        guard let line else { return reason }
        return "line \(line): \(reason)"
    }
}
