extension CommandSpec {
    /// Parses a command line against this spec.
    ///
    /// The rules follow swift-argument-parser's:
    /// - `-h` or `--help` anywhere before `--` asks for help, even next to errors or where a value was
    ///   expected; then `--version` asks for the version if `options` declares a `version` flag.
    /// - Options are `--long value`, `--long=value` and `-s value`. A value option takes the next word
    ///   whatever it is, so `--offset -1` works. A flag given `--flag=value` is an error.
    /// - A non-repeatable option given twice keeps the last value; a repeatable one keeps all, in order.
    /// - `--` ends the options: every later word is positional. A lone `-` is positional too.
    /// - Positional words bind to `arguments` in order. Each argument first gets its minimum; the spare words
    ///   go to the earliest arguments that take more, leaving enough for the required ones after them.
    /// - Combined short flags (`-abc`) and `-s=value` are not supported and read as unknown options.
    ///
    /// - Parameter arguments: The words after the executable's name and any subcommand words.
    /// - Returns: `.help`, `.version`, or `.run` with the parsed arguments.
    /// - Throws: `UsageError` for the first word, left to right, that doesn't fit, then for a missing required
    ///   argument.
    public func parse(_ arguments: [String]) throws(UsageError) -> ParseOutcome {
        if let builtIn = builtInRequest(in: arguments) {
            return builtIn
        }

        var specsByLong: [String: OptionSpec] = [:]
        var specsByShort: [Character: OptionSpec] = [:]
        for option in options {
            specsByLong[option.long] = option
            if let short = option.short {
                specsByShort[short] = option
            }
        }

        var occurrences: [String: [ParsedArguments.Occurrence]] = [:]
        var words: [String] = []
        var index = arguments.startIndex
        var optionsEnded = false

        while index < arguments.endIndex {
            let argument = arguments[index]
            index += 1

            if optionsEnded || argument == "-" || !argument.hasPrefix("-") {
                words.append(argument)
                continue
            }
            if argument == "--" {
                optionsEnded = true
                continue
            }

            let spelling: String
            let inlineValue: String?
            let spec: OptionSpec
            if argument.hasPrefix("--") {
                let nameEnd = argument.firstIndex(of: "=") ?? argument.endIndex
                spelling = String(argument[..<nameEnd])
                inlineValue = nameEnd == argument.endIndex ? nil : String(argument[argument.index(after: nameEnd)...])
                guard let found = specsByLong[String(spelling.dropFirst(2))] else {
                    throw UsageError(message: "Unknown option '\(spelling)'")
                }
                spec = found
            } else {
                // Exactly one character after the dash; anything longer would be combined short flags.
                guard argument.count == 2,
                    let found = specsByShort[argument[argument.index(after: argument.startIndex)]]
                else {
                    throw UsageError(message: "Unknown option '\(argument)'")
                }
                spelling = argument
                inlineValue = nil
                spec = found
            }

            let value: String?
            if !spec.takesValue {
                if let inlineValue {
                    throw UsageError(
                        message: "The option '\(spelling)' does not take any value, but '\(inlineValue)' was specified."
                    )
                }
                value = nil
            } else if let inlineValue {
                value = inlineValue
            } else if index < arguments.endIndex {
                value = arguments[index]
                index += 1
            } else {
                throw UsageError(message: "Missing value for '\(spelling) \(spec.valuePlaceholder)'")
            }

            let occurrence = ParsedArguments.Occurrence(spelling: spelling, value: value)
            if spec.repeatable {
                occurrences[spec.long, default: []].append(occurrence)
            } else {
                occurrences[spec.long] = [occurrence]
            }
        }

        let bound = try bind(words)
        return .run(ParsedArguments(specs: specsByLong, occurrences: occurrences, bound: bound, positionals: words))
    }

    /// Finds `-h`/`--help`, then a declared `--version`, before any `--`.
    ///
    /// swift-argument-parser scans for these before parsing anything else, so `--help` wins over an unknown
    /// option, a missing argument, or even sitting where a value was expected.
    private func builtInRequest(in arguments: [String]) -> ParseOutcome? {
        let beforeTerminator = arguments.prefix { $0 != "--" }
        let names = beforeTerminator.map { argument in
            argument.hasPrefix("--") ? String(argument.prefix { $0 != "=" }) : argument
        }
        if names.contains("-h") || names.contains("--help") {
            return .help
        }
        if options.contains(where: { $0.long == "version" }) && names.contains("--version") {
            return .version
        }
        return nil
    }

    /// Binds positional words to `arguments`, in order.
    private func bind(_ words: [String]) throws(UsageError) -> [String: [String]] {
        // What the arguments after each one need at least, so a variadic argument leaves them their words.
        var neededAfter = Array(repeating: 0, count: self.arguments.count + 1)
        for position in self.arguments.indices.reversed() {
            neededAfter[position] = neededAfter[position + 1] + self.arguments[position].minimumCount
        }

        var bound: [String: [String]] = [:]
        var next = words.startIndex
        for (position, argument) in self.arguments.enumerated() {
            let remaining = words.endIndex - next
            let minimum = min(argument.minimumCount, remaining)
            guard minimum == argument.minimumCount else {
                throw UsageError(message: "Missing expected argument '\(argument.synopsis)'")
            }
            let spare = max(0, remaining - minimum - neededAfter[position + 1])
            let count = minimum + min(spare, argument.maximumCount - minimum)
            bound[argument.name, default: []].append(contentsOf: words[next..<next + count])
            next += count
        }

        let extra = words[next...]
        switch extra.count {
        case 0:
            return bound
        case 1:
            throw UsageError(message: "Unexpected argument '\(extra[extra.startIndex])'")
        default:
            throw UsageError(message: "\(extra.count) unexpected arguments: '\(extra.joined(separator: "', '"))'")
        }
    }
}
