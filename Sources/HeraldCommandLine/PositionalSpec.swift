/// A positional argument that a command accepts, such as `<name>` or `[<pairs> ...]`.
public struct PositionalSpec: Sendable {
    /// How many words of the command line a positional argument binds.
    public enum Arity: Sendable, Equatable {
        /// Exactly one word; its absence is a usage error.
        case required
        /// Zero or one word.
        case optional
        /// Any number of words, including none.
        case zeroOrMore
        /// At least one word; none is a usage error.
        case oneOrMore
    }

    /// The argument's name, shown as `<name>`.
    public var name: String

    /// The one-line description shown under ARGUMENTS.
    public var help: String

    /// How many words the argument binds.
    public var arity: Arity

    /// Creates a positional argument spec.
    ///
    /// - Parameters:
    ///   - name: The name shown as `<name>` and used with `ParsedArguments.positional(_:)`.
    ///   - help: The one-line description.
    ///   - arity: How many words the argument binds.
    public init(name: String, help: String = "", arity: Arity = .required) {
        self.name = name
        self.help = help
        self.arity = arity
    }

    /// The fewest words this argument needs.
    var minimumCount: Int {
        switch arity {
        case .required, .oneOrMore: 1
        case .optional, .zeroOrMore: 0
        }
    }

    /// The most words this argument takes, `Int.max` for the variadic arities.
    var maximumCount: Int {
        switch arity {
        case .required, .optional: 1
        case .zeroOrMore, .oneOrMore: .max
        }
    }

    /// The argument as shown in usage lines and "missing" errors, without optional brackets.
    var synopsis: String {
        maximumCount > 1 ? "<\(name)> ..." : "<\(name)>"
    }
}
