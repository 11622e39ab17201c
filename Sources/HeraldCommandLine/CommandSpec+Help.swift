extension CommandSpec {
    /// The width help text wraps to. Fixed rather than the terminal's, so help is the same everywhere and
    /// golden tests hold; swift-argument-parser falls back to 80 when it can't ask the terminal.
    static let screenWidth = 80

    /// The column where option and argument descriptions start, as in swift-argument-parser.
    static let labelColumnWidth = 26

    /// The help shown for `-h`/`--help`, ending with a newline; print it on stdout.
    ///
    /// Sections follow swift-argument-parser's layout: `OVERVIEW:` (abstract, then discussion), `USAGE:`,
    /// then `ARGUMENTS:`, `OPTIONS:` (ending with `-h, --help`) and `SUBCOMMANDS:`, each only if non-empty.
    /// Descriptions start at column 26 and wrap at 80 columns with a hanging indent; a label too long for the
    /// column puts its description on the next line. A command with subcommands ends with a hint to ask a
    /// subcommand for its help.
    public var helpText: String {
        var text = ""
        let overview = [abstract, discussion ?? ""].filter { !$0.isEmpty }.joined(separator: "\n\n")
        if !overview.isEmpty {
            text += "OVERVIEW: \(overview)".wrappedLines(toWidth: Self.screenWidth).joined(separator: "\n") + "\n\n"
        }
        text += "USAGE: \(usageLine.hangingIndented(by: 7))\n\n"

        let optionRows =
            options.map { option in
                let defaultText = option.defaultDescription.map { "(default: \($0))" } ?? ""
                let description = [option.help, defaultText].filter { !$0.isEmpty }.joined(separator: " ")
                return (label: option.helpLabel, description: description)
            } + [(label: "-h, --help", description: "Show help information.")]
        let sections = [
            (header: "ARGUMENTS", rows: arguments.map { (label: "<\($0.name)>", description: $0.help) }),
            (header: "OPTIONS", rows: optionRows),
            (header: "SUBCOMMANDS", rows: subcommands.map { (label: $0.lastWord, description: $0.abstract) }),
        ]
        text +=
            sections
            .filter { !$0.rows.isEmpty }
            .map { section in
                "\(section.header):\n"
                    + section.rows.map { Self.row(label: $0.label, description: $0.description) }.joined()
            }
            .joined(separator: "\n")

        if !subcommands.isEmpty {
            text += "\n  See '\(name) <subcommand> --help' for detailed help.\n"
        }
        return text
    }

    /// The one-line synopsis, e.g. `herald post <name> [<pairs> ...] [--json <json>] [--retain]`.
    ///
    /// It is `usage` when set. Otherwise it is the name, the positional arguments, then the options by long
    /// name (optional ones in brackets, repeatable ones with `...`), and `<subcommand>` if there are
    /// subcommands. `--help` and a declared `--version` are left out, as swift-argument-parser does. Past 12
    /// arguments and options, the options shrink to `[<options>]`.
    public var usageLine: String {
        if let usage {
            return usage
        }
        let positionalParts = arguments.map { argument in
            switch argument.arity {
            case .required, .oneOrMore: argument.synopsis
            case .optional, .zeroOrMore: "[\(argument.synopsis)]"
            }
        }
        let optionParts = options.filter { $0.long != "version" }.map { option in
            let value = option.takesValue ? " \(option.valuePlaceholder)" : ""
            let repeats = option.repeatable ? " ..." : ""
            return "[--\(option.long)\(value)\(repeats)]"
        }

        var parts = [name]
        if positionalParts.count + optionParts.count <= 12 {
            parts += positionalParts + optionParts
        } else if !positionalParts.isEmpty && positionalParts.count <= 12 {
            parts += ["[<options>]"] + positionalParts
        } else {
            parts += ["<options>"]
        }
        if !subcommands.isEmpty {
            parts.append("<subcommand>")
        }
        return parts.joined(separator: " ")
    }

    /// The text to print on stderr for a usage error, ending with a newline.
    ///
    /// The layout is swift-argument-parser's:
    /// ```
    /// Error: Unknown option '--foo'
    /// Usage: herald post <name> [--retain]
    ///   See 'herald post --help' for more information.
    /// ```
    ///
    /// - Parameter error: The error `parse(_:)` or a typed accessor threw.
    /// - Returns: The message, the usage line and the hint, one per line.
    public func errorText(_ error: UsageError) -> String {
        "Error: \(error.message)\n"
            + "Usage: \(usageLine.hangingIndented(by: 7))\n"
            + "  See '\(name) --help' for more information.\n"
    }

    /// The last word of the name, which is how a parent command lists this one.
    var lastWord: String {
        String(name.split(separator: " ").last ?? Substring(name))
    }

    /// One ARGUMENTS/OPTIONS/SUBCOMMANDS row: the label indented by 2, the description from column 26.
    static func row(label: String, description: String) -> String {
        let paddedLabel = "  " + label
        guard !description.isEmpty else { return paddedLabel + "\n" }
        let indent = String(repeating: " ", count: labelColumnWidth)
        let lines = description.wrappedLines(toWidth: screenWidth - labelColumnWidth).map {
            $0.isEmpty ? $0 : indent + $0
        }
        if paddedLabel.count < labelColumnWidth {
            // The first line's indent is where the label goes.
            let first = paddedLabel + lines[0].dropFirst(paddedLabel.count)
            return ([first] + lines.dropFirst()).joined(separator: "\n") + "\n"
        }
        return paddedLabel + "\n" + lines.joined(separator: "\n") + "\n"
    }
}

extension OptionSpec {
    /// The label under OPTIONS: short name first, then long, then the value, e.g. `-s, --socket <path>`.
    var helpLabel: String {
        let names = [short.map { "-\($0)" }, "--\(long)"].compactMap { $0 }.joined(separator: ", ")
        return takesValue ? "\(names) \(valuePlaceholder)" : names
    }
}
