import HeraldCommandLine
import Testing

/// The pieces `runMain` is made of, which decide what an executable prints and how it exits.
@Suite struct RunMainTests {
    private static let versioned = CommandSpec(
        name: "tool",
        abstract: "A tool.",
        options: [
            OptionSpec(long: "count", valueName: "N", help: "How many."),
            OptionSpec(long: "version", help: "Show the version."),
        ]
    )

    private static func count(_ arguments: ParsedArguments) throws(UsageError) -> Int {
        try arguments.int("count") ?? 0
    }

    @Test func versionIsShownWithANewline() {
        guard case .show(let text) = Self.versioned.invocation(["--version"], version: "tool 1.0", options: Self.count)
        else {
            Issue.record("--version did not ask to show the version")
            return
        }
        #expect(text == "tool 1.0\n")
    }

    @Test func helpIsShown() {
        guard case .show(let text) = Self.versioned.invocation(["--help"], version: "tool 1.0", options: Self.count)
        else {
            Issue.record("--help did not ask to show the help")
            return
        }
        #expect(text == Self.versioned.helpText)
    }

    @Test func aBadValueIsAUsageErrorWordedByTheSpec() {
        let invocation = Self.versioned.invocation(["--count", "x"], version: "tool 1.0", options: Self.count)
        guard case .usageError(let text) = invocation else {
            Issue.record("a bad value did not make a usage error")
            return
        }
        #expect(text.hasPrefix("Error: "))
        #expect(text.contains("'x'"))
    }

    @Test func aGoodCommandLineRunsWithTheOptionsBuilt() {
        guard
            case .run(let count, let spec) = Self.versioned.invocation(
                ["--count", "3"],
                version: "",
                options: Self.count
            )
        else {
            Issue.record("a good command line did not ask to run")
            return
        }
        #expect(count == 3)
        #expect(spec.name == "tool")
    }

    @Test func failuresPrintErrorAndTheUsageOnlyWhenAsked() {
        #expect(CommandFailure.failure("it broke").text(for: Self.versioned) == "Error: it broke\n")
        #expect(CommandFailure(status: .failure, message: nil).text(for: Self.versioned) == "")
        let usage = CommandFailure.usage(UsageError(message: "bad name")).text(for: Self.versioned)
        #expect(usage.hasPrefix("Error: bad name\n"))
        #expect(usage.contains("--help"))
        #expect(CommandFailure.timedOut("late").status == .timeout)
    }

    @Test(arguments: [(Int32(2), ExitCode.interrupted), (15, .terminated)])
    func aStopSignalExitsWith128PlusItsNumber(signal: Int32, code: ExitCode) {
        #expect(ExitCode(signal: signal) == code)
        #expect(code.rawValue == 128 + signal)
    }

    @Test func otherSignalsHaveNoExitCode() {
        #expect(ExitCode(signal: 9) == nil)
        #expect(ExitCode(signal: 1) == nil)
    }

    @Test func theStoppingSignalsAreSIGINTAndSIGTERM() {
        #expect(Signals.stopping == [2, 15])
    }
}
