import HeraldCommandLine
import Testing

@Suite struct CommandSpecParsingTests {
    /// What a parse came to, reduced to something a table can state.
    enum Kind: Equatable, Sendable {
        case run
        case help
        case version
        case error(String)
    }

    private static func kind(_ spec: CommandSpec, _ argv: [String]) -> Kind {
        do {
            switch try spec.parse(argv) {
            case .run: return .run
            case .help: return .help
            case .version: return .version
            }
        } catch {
            return .error(error.message)
        }
    }

    private static func run(_ spec: CommandSpec, _ argv: [String]) throws -> ParsedArguments {
        guard case .run(let parsed) = try spec.parse(argv) else {
            Issue.record("expected .run for \(argv)")
            throw UsageError(message: "not run")
        }
        return parsed
    }

    @Test(arguments: [
        (["--help"], Kind.help),
        (["-h"], .help),
        (["ready", "--help"], .help),
        // Help wins over errors and over sitting where a value was expected, as in swift-argument-parser.
        (["--bogus", "--help"], .help),
        (["--json", "--help"], .help),
        (["--help=yes"], .help),
        (["-h", "too", "many", "--bogus"], .help),
        // After `--`, `--help` is just a word.
        (["--", "--help"], .run),
        (["ready", "--", "-h"], .run),
        // `herald post` declares no version flag.
        (["--version"], .error("Unknown option '--version'")),
    ])
    func recognisesHelpAnywhereBeforeTheTerminator(argv: [String], expected: Kind) {
        #expect(Self.kind(Fixtures.post, argv) == expected)
    }

    @Test(arguments: [
        (["--version"], Kind.version),
        (["--count", "3", "--version"], .version),
        (["--version", "--help"], .help),
        (["--", "--version"], .error("Unexpected argument '--version'")),
    ])
    func recognisesVersionOnlyWhenDeclared(argv: [String], expected: Kind) {
        #expect(Self.kind(Fixtures.bench, argv) == expected)
    }

    @Test(arguments: [
        (["--bogus"], "Unknown option '--bogus'"),
        (["ready", "--foo=bar"], "Unknown option '--foo'"),
        (["-x"], "Unknown option '-x'"),
        (["-sx"], "Unknown option '-sx'"),
        (["-s=/tmp/s"], "Unknown option '-s=/tmp/s'"),
        (["-1"], "Unknown option '-1'"),
        (["ready", "--socket"], "Missing value for '--socket <path>'"),
        (["ready", "-s"], "Missing value for '-s <path>'"),
        (["ready", "--retain=yes"], "The option '--retain' does not take any value, but 'yes' was specified."),
        (["ready", "--retain="], "The option '--retain' does not take any value, but '' was specified."),
        ([], "Missing expected argument '<name>'"),
        (["--retain"], "Missing expected argument '<name>'"),
        // The first bad word, left to right, is the one reported.
        (["--bogus", "--socket"], "Unknown option '--bogus'"),
    ])
    func rejectsMalformedCommandLines(argv: [String], message: String) {
        #expect(Self.kind(Fixtures.post, argv) == .error(message))
    }

    @Test(arguments: [
        (["--json", "{}"], "{}"),
        (["--json={\"a\":1}"], "{\"a\":1}"),
        (["--json="], ""),
        (["--json=a=b"], "a=b"),
        // A value option takes the next word even when it looks like an option or the terminator.
        (["--json", "-1"], "-1"),
        (["--json", "--retain"], "--retain"),
        (["--json", "--"], "--"),
        // Not repeatable: the last occurrence wins, as with swift-argument-parser's single-value options.
        (["--json", "1", "--json", "2"], "2"),
    ])
    func readsOptionValuesInEverySpelling(argv: [String], expected: String) throws {
        let parsed = try Self.run(Fixtures.post, ["ready"] + argv)
        #expect(parsed.value("json") == expected)
        #expect(parsed.values("json") == [expected])
        #expect(parsed.positionals == ["ready"])
    }

    @Test func readsShortAndLongSpellingsOfTheSameOption() throws {
        let parsed = try Self.run(Fixtures.post, ["-s", "/a", "ready", "--socket", "/b"])
        #expect(parsed.value("socket") == "/b")
        #expect(parsed.values("socket") == ["/b"])
    }

    @Test func reportsAbsentOptionsAsNilAndFlagsAsFalse() throws {
        let parsed = try Self.run(Fixtures.post, ["ready"])
        #expect(parsed.value("json") == nil)
        #expect(parsed.values("json") == [])
        #expect(parsed.flag("retain") == false)
    }

    @Test(arguments: [
        (["--retain"], true),
        (["--retain", "--retain"], true),
        (["--", "--retain"], false),
        ([], false),
    ])
    func setsFlagsOnlyBeforeTheTerminator(argv: [String], expected: Bool) throws {
        let parsed = try Self.run(Fixtures.post, ["ready"] + argv)
        #expect(parsed.flag("retain") == expected)
    }

    @Test(arguments: [
        (["--tag", "a", "-t", "b", "--tag=c"], ["a", "b", "c"]),
        (["-t", "x"], ["x"]),
        ([], []),
    ])
    func keepsEveryValueOfARepeatableOptionInOrder(argv: [String], expected: [String]) throws {
        let parsed = try Self.run(Fixtures.bench, argv)
        #expect(parsed.values("tag") == expected)
        #expect(parsed.value("tag") == expected.last)
    }

    @Test(arguments: [
        (["ready"], ["ready"], []),
        (["ready", "a=1", "b=2"], ["ready"], ["a=1", "b=2"]),
        (["ready", "--retain", "a=1"], ["ready"], ["a=1"]),
        (["--", "-dashed", "--json"], ["-dashed"], ["--json"]),
        (["-", "a=1"], ["-"], ["a=1"]),
    ])
    func bindsPositionalWordsToArgumentsInOrder(argv: [String], name: [String], pairs: [String]) throws {
        let parsed = try Self.run(Fixtures.post, argv)
        #expect(parsed.positional("name") == name)
        #expect(parsed.positional("pairs") == pairs)
        #expect(parsed.positionals == name + pairs)
    }

    @Test(
        arguments: [
            (["a", "b"], ["a"], ["b"], []),
            (["a", "b", "c"], ["a", "b"], ["c"], []),
            // The variadic argument leaves the required one after it its word; the optional one gets none.
            (["a", "b", "c", "d"], ["a", "b", "c"], ["d"], []),
        ] as [([String], [String], [String], [String])]
    )
    func sharesWordsSoLaterRequiredArgumentsAreFilled(
        argv: [String],
        sources: [String],
        destination: [String],
        mode: [String]
    ) throws {
        let parsed = try Self.run(Fixtures.copy, argv)
        #expect(parsed.positional("sources") == sources)
        #expect(parsed.positional("destination") == destination)
        #expect(parsed.positional("mode") == mode)
    }

    @Test(arguments: [
        ([], "Missing expected argument '<sources> ...'"),
        (["a"], "Missing expected argument '<destination>'"),
    ])
    func namesTheFirstArgumentLeftWithoutWords(argv: [String], message: String) {
        #expect(Self.kind(Fixtures.copy, argv) == .error(message))
    }

    @Test(arguments: [
        (["x"], "Unexpected argument 'x'"),
        (["x", "y"], "2 unexpected arguments: 'x', 'y'"),
        (["--", "--count"], "Unexpected argument '--count'"),
    ])
    func rejectsWordsNoArgumentTakes(argv: [String], message: String) {
        #expect(Self.kind(Fixtures.bench, argv) == .error(message))
    }

    @Test func parsesTheExampleCommandLineCompletely() throws {
        let parsed = try Self.run(
            Fixtures.post,
            ["session.willResignActive", "--retain", "-s", "/run/herald", "reason=lock", "--json={}", "--", "-x=1"]
        )
        #expect(parsed.positional("name") == ["session.willResignActive"])
        #expect(parsed.positional("pairs") == ["reason=lock", "-x=1"])
        #expect(parsed.flag("retain"))
        #expect(parsed.value("socket") == "/run/herald")
        #expect(parsed.value("json") == "{}")
    }
}
