/// The options and positional arguments of a command line that matched its spec.
///
/// Accessors take the option's long name (or the positional's name) exactly as declared in the spec. Asking
/// for a name the spec doesn't declare, or for a flag's value, traps: that is a typo in the executable, not a
/// user error, and a test run finds it at once.
public struct ParsedArguments: Sendable {
    /// One appearance of an option on the command line.
    struct Occurrence: Sendable {
        /// The name as the user spelled it, `-s` or `--socket`, so messages quote what was typed.
        var spelling: String
        /// The value, or `nil` for a flag.
        var value: String?
    }

    /// The declared options by long name.
    let specs: [String: OptionSpec]
    /// The occurrences of each option that appeared, in command-line order.
    var occurrences: [String: [Occurrence]]
    /// The positional words bound to each declared positional argument.
    let bound: [String: [String]]

    /// Every positional word, in command-line order, including those after `--`.
    public var positionals: [String]

    init(
        specs: [String: OptionSpec],
        occurrences: [String: [Occurrence]],
        bound: [String: [String]],
        positionals: [String]
    ) {
        self.specs = specs
        self.occurrences = occurrences
        self.bound = bound
        self.positionals = positionals
    }

    /// Returns whether the flag appeared at least once.
    ///
    /// - Parameter long: The flag's long name, without dashes.
    public func flag(_ long: String) -> Bool {
        let spec = declared(long)
        precondition(!spec.takesValue, "'--\(long)' takes a value; read it with value(_:)")
        return occurrences[long] != nil
    }

    /// Returns the option's value from its last occurrence, or `nil` if it didn't appear.
    ///
    /// - Parameter long: The option's long name, without dashes.
    public func value(_ long: String) -> String? {
        lastOccurrence(long)?.value
    }

    /// Returns every value the option was given, in command-line order.
    ///
    /// For an option that isn't `repeatable` this holds at most one value, the last one given.
    ///
    /// - Parameter long: The option's long name, without dashes.
    public func values(_ long: String) -> [String] {
        let spec = declared(long)
        precondition(spec.takesValue, "'--\(long)' is a flag; read it with flag(_:)")
        return (occurrences[long] ?? []).compactMap(\.value)
    }

    /// Returns the positional words bound to the named positional argument, in order.
    ///
    /// - Parameter name: The positional argument's name as declared.
    public func positional(_ name: String) -> [String] {
        guard let words = bound[name] else {
            preconditionFailure("no positional argument named '\(name)' is declared")
        }
        return words
    }

    /// The last occurrence of a value option, or `nil` if it didn't appear.
    func lastOccurrence(_ long: String) -> Occurrence? {
        let spec = declared(long)
        precondition(spec.takesValue, "'--\(long)' is a flag; read it with flag(_:)")
        return occurrences[long]?.last
    }

    /// The spec of a declared option; traps on a name the spec doesn't declare.
    func declared(_ long: String) -> OptionSpec {
        guard let spec = specs[long] else {
            preconditionFailure("no option '--\(long)' is declared")
        }
        return spec
    }
}
