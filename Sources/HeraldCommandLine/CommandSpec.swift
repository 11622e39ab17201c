/// The description of one command: what it accepts and how its help reads.
///
/// A spec is plain data. Parsing (`parse(_:)`) and rendering (`helpText`, `usageLine`, `errorText(_:)`) live
/// in extensions and never touch the process: the executable decides what to print and how to exit.
///
/// `-h` and `--help` are built in and always listed last under OPTIONS; don't declare them. `--version` is
/// recognised only when `options` declares a flag whose `long` is `"version"`.
public struct CommandSpec: Sendable {
    /// The full command path used in messages, e.g. `"herald post"`.
    public var name: String

    /// One line that says what the command does, shown after `OVERVIEW:`.
    public var abstract: String

    /// An optional paragraph shown after the abstract, separated from it by a blank line.
    public var discussion: String?

    /// A replacement for the generated usage line, without the `USAGE: ` prefix; `nil` generates one.
    public var usage: String?

    /// The positional arguments, bound to the command line's positional words in this order.
    public var arguments: [PositionalSpec]

    /// The named options and flags, listed in this order in help and usage.
    public var options: [OptionSpec]

    /// The commands nested under this one, listed under SUBCOMMANDS by the last word of their name.
    ///
    /// Parsing does not dispatch to them: the executable picks the subcommand from argv and parses the rest
    /// with that subcommand's spec.
    public var subcommands: [CommandSpec]

    /// Creates a command spec.
    ///
    /// - Parameters:
    ///   - name: The full command path used in messages, e.g. `"herald post"`.
    ///   - abstract: One line shown after `OVERVIEW:`.
    ///   - discussion: An optional paragraph after the abstract.
    ///   - usage: A replacement for the generated usage line, without `USAGE: `.
    ///   - arguments: The positional arguments, in order.
    ///   - options: The named options and flags, in display order.
    ///   - subcommands: The nested commands listed under SUBCOMMANDS.
    public init(
        name: String,
        abstract: String = "",
        discussion: String? = nil,
        usage: String? = nil,
        arguments: [PositionalSpec] = [],
        options: [OptionSpec] = [],
        subcommands: [CommandSpec] = []
    ) {
        self.name = name
        self.abstract = abstract
        self.discussion = discussion
        self.usage = usage
        self.arguments = arguments
        self.options = options
        self.subcommands = subcommands
    }
}
