import HeraldCommandLine
import Testing

@Suite struct ParsedArgumentsConversionTests {
    /// Parses `argv` with the bench spec, which declares every kind of option.
    private static func parsed(_ argv: [String]) throws -> ParsedArguments {
        guard case .run(let parsed) = try Fixtures.bench.parse(argv) else {
            Issue.record("expected .run for \(argv)")
            throw UsageError(message: "not run")
        }
        return parsed
    }

    /// The value, or the error's message, so a table can state either.
    private static func outcome<T>(_ body: () throws(UsageError) -> T?) -> String {
        do {
            return try body().map { "\($0)" } ?? "nil"
        } catch {
            return error.message
        }
    }

    @Test(arguments: [
        ([], "nil"),
        (["--count", "5"], "5"),
        (["--count", "-1"], "-1"),
        (["--count", "+7"], "7"),
        (["--count", "1", "-c", "2"], "2"),
        (["--count", "abc"], "The value 'abc' is invalid for '--count <count>'"),
        (["-c", "1.5"], "The value '1.5' is invalid for '-c <count>'"),
        (["--count="], "The value '' is invalid for '--count <count>'"),
        (["--count", "99999999999999999999"], "The value '99999999999999999999' is invalid for '--count <count>'"),
    ])
    func convertsIntegersAndQuotesTheOptionAsTyped(argv: [String], expected: String) throws {
        let arguments = try Self.parsed(argv)
        #expect(Self.outcome { () throws(UsageError) in try arguments.int("count") } == expected)
    }

    @Test(arguments: [
        (["--count", "1"], "1"),
        (["--count", "10"], "10"),
        (["--count", "0"], "The value '0' is invalid for '--count <count>': must be in the range 1...10"),
        (["-c", "-1"], "The value '-1' is invalid for '-c <count>': must be in the range 1...10"),
        (["--count", "11"], "The value '11' is invalid for '--count <count>': must be in the range 1...10"),
    ])
    func rejectsIntegersOutsideTheRange(argv: [String], expected: String) throws {
        let arguments = try Self.parsed(argv)
        #expect(Self.outcome { () throws(UsageError) in try arguments.int("count", range: 1...10) } == expected)
    }

    @Test(arguments: [
        ([], "nil"),
        (["--timeout", "2.5"], "2.5"),
        (["--timeout", "3"], "3.0"),
        (["--timeout=1e-3"], "0.001"),
        (["--timeout", "soon"], "The value 'soon' is invalid for '--timeout <seconds>'"),
        (
            ["--timeout", "-0.5"],
            "The value '-0.5' is invalid for '--timeout <seconds>': must be in the range 0.0...60.0"
        ),
        (
            ["--timeout", "nan"],
            "The value 'nan' is invalid for '--timeout <seconds>': must be in the range 0.0...60.0"
        ),
        (["--timeout", "61"], "The value '61' is invalid for '--timeout <seconds>': must be in the range 0.0...60.0"),
    ])
    func convertsDecimalsWithinTheRange(argv: [String], expected: String) throws {
        let arguments = try Self.parsed(argv)
        #expect(Self.outcome { () throws(UsageError) in try arguments.double("timeout", range: 0...60) } == expected)
    }

    @Test(arguments: [
        (["json"], [], "nil"),
        (["json", "text"], ["--format", "text"], "text"),
        (
            ["json", "text"], ["--format", "xml"],
            "The value 'xml' is invalid for '--format <format>'. Please provide one of 'json' and 'text'."
        ),
        (
            ["a", "b", "c"], ["--format", "d"],
            "The value 'd' is invalid for '--format <format>'. Please provide one of 'a', 'b' or 'c'."
        ),
        (
            ["a", "b", "c", "d", "e", "f"], ["--format", "g"],
            """
            The value 'g' is invalid for '--format <format>'. Please provide one of the following:
              - a
              - b
              - c
              - d
              - e
              - f
            """
        ),
        // Choices are exact: no case folding, no prefixes.
        (
            ["json"], ["--format", "JSON"],
            "The value 'JSON' is invalid for '--format <format>'. Please provide one of 'json'."
        ),
    ])
    func acceptsOnlyTheListedChoices(choices: [String], argv: [String], expected: String) throws {
        let arguments = try Self.parsed(argv)
        #expect(Self.outcome { () throws(UsageError) in try arguments.choice("format", of: choices) } == expected)
    }
}
