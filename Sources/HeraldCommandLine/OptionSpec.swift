/// A named option (`--socket <path>`) or flag (`--retain`) that a command accepts.
///
/// An option with a `valueName` takes a value, given as `--long value`, `--long=value` or `-s value`. Without
/// one it is a flag, and giving it `=value` is a usage error.
public struct OptionSpec: Sendable {
    /// The long name without dashes: `"socket"` is spelled `--socket`.
    public var long: String

    /// The optional one-character short name: `"s"` is spelled `-s`.
    public var short: Character?

    /// The name of the value, e.g. `"PATH"`, shown lower-cased as `<path>`; `nil` makes this a flag.
    public var valueName: String?

    /// The one-line description shown under OPTIONS.
    public var help: String

    /// Whether the option is meant to be given several times.
    ///
    /// A repeatable option keeps every value in order and shows `...` in the usage line. A non-repeatable
    /// option given twice is not an error: the last value wins, as with swift-argument-parser's single-value
    /// options, and `ParsedArguments.values(_:)` returns only that one.
    public var repeatable: Bool

    /// What happens when the option is absent, shown as `(default: …)` after the help; `nil` shows nothing.
    public var defaultDescription: String?

    /// Creates an option spec.
    ///
    /// - Parameters:
    ///   - long: The long name without dashes.
    ///   - short: The optional short name.
    ///   - valueName: The value's name, e.g. `"PATH"`; `nil` for a flag.
    ///   - help: The one-line description.
    ///   - repeatable: Whether every occurrence is kept.
    ///   - defaultDescription: The text shown as `(default: …)`.
    public init(
        long: String,
        short: Character? = nil,
        valueName: String? = nil,
        help: String = "",
        repeatable: Bool = false,
        defaultDescription: String? = nil
    ) {
        self.long = long
        self.short = short
        self.valueName = valueName
        self.help = help
        self.repeatable = repeatable
        self.defaultDescription = defaultDescription
    }

    /// Whether the option takes a value rather than being a flag.
    var takesValue: Bool { valueName != nil }

    /// The value's placeholder as shown to users, e.g. `<path>`.
    var valuePlaceholder: String { "<\((valueName ?? long).lowercased())>" }
}
