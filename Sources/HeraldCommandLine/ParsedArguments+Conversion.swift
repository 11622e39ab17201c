extension ParsedArguments {
    /// Returns the option's last value as an integer, or `nil` if the option didn't appear.
    ///
    /// - Parameters:
    ///   - long: The option's long name, without dashes.
    ///   - range: The values accepted; `nil` accepts any `Int`.
    /// - Throws: `UsageError` such as `The value 'abc' is invalid for '--count <count>'`, or, outside
    ///   `range`, `The value '0' is invalid for '--count <count>': must be in the range 1...9`.
    public func int(_ long: String, range: ClosedRange<Int>? = nil) throws(UsageError) -> Int? {
        try number(long, range: range) { Int($0) }
    }

    /// Returns the option's last value as a floating-point number, or `nil` if the option didn't appear.
    ///
    /// Accepts what `Double.init(_:)` accepts, such as `2.5`, `-1`, `1e3`.
    ///
    /// - Parameters:
    ///   - long: The option's long name, without dashes.
    ///   - range: The values accepted; `nil` accepts any `Double`.
    /// - Throws: `UsageError` such as `The value 'soon' is invalid for '--timeout <seconds>'`, or, outside
    ///   `range`, `The value '-1' is invalid for '--timeout <seconds>': must be in the range 0.0...60.0`.
    public func double(_ long: String, range: ClosedRange<Double>? = nil) throws(UsageError) -> Double? {
        // NaN is in no range, so `contains` rejects it too.
        try number(long, range: range) { Double($0) }
    }

    /// The option's last value read by `parse` and checked against `range`: what ``int(_:range:)`` and
    /// ``double(_:range:)`` share.
    private func number<Number: Comparable>(
        _ long: String,
        range: ClosedRange<Number>?,
        _ parse: (String) -> Number?
    ) throws(UsageError) -> Number? {
        guard let occurrence = lastOccurrence(long), let text = occurrence.value else { return nil }
        guard let number = parse(text) else {
            throw invalidValue(occurrence, long, detail: "")
        }
        if let range, !range.contains(number) {
            throw invalidValue(occurrence, long, detail: ": must be in the range \(range)")
        }
        return number
    }

    /// Returns the option's last value if it is one of `choices`, or `nil` if the option didn't appear.
    ///
    /// - Parameters:
    ///   - long: The option's long name, without dashes.
    ///   - choices: The accepted values, in the order the error lists them.
    /// - Throws: `UsageError` listing the choices as swift-argument-parser does, e.g.
    ///   `The value 'xml' is invalid for '--format <format>'. Please provide one of 'json' and 'text'.`
    public func choice(_ long: String, of choices: [String]) throws(UsageError) -> String? {
        guard let occurrence = lastOccurrence(long), let text = occurrence.value else { return nil }
        guard choices.contains(text) else {
            throw invalidValue(occurrence, long, detail: Self.choiceList(choices))
        }
        return text
    }

    /// The error for a value that doesn't convert, quoting the option as the user spelled it.
    private func invalidValue(_ occurrence: Occurrence, _ long: String, detail: String) -> UsageError {
        let placeholder = declared(long).valuePlaceholder
        let value = occurrence.value ?? ""
        return UsageError(
            message: "The value '\(value)' is invalid for '\(occurrence.spelling) \(placeholder)'\(detail)"
        )
    }

    /// swift-argument-parser's list of valid values: "and" for two, "or" before the last of up to five, a
    /// bulleted list beyond that.
    private static func choiceList(_ choices: [String]) -> String {
        guard !choices.isEmpty else { return "" }
        if choices.count >= 6 {
            return ". Please provide one of the following:\n" + choices.map { "  - \($0)" }.joined(separator: "\n")
        }
        let quoted = choices.map { "'\($0)'" }
        if quoted.count <= 2 {
            return ". Please provide one of \(quoted.joined(separator: " and "))."
        }
        return ". Please provide one of \(quoted.dropLast().joined(separator: ", ")) or \(quoted[quoted.count - 1])."
    }
}
