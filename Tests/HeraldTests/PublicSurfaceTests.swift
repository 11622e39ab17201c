import Foundation
import HeraldTestSupport
import HeraldWire
import Synchronization
import Testing

@testable import Herald
@testable import HeraldCore

/// What an app gets from `import Herald` alone: checks of names and patterns, the overflow policies, the default
/// socket path and the logging hook, with no type of an internal module in sight.
@Suite struct PublicSurfaceTests {
    @Test(arguments: [
        ("a..b", #"invalid name "a..b": empty segment at byte 2"#),
        (".a", #"invalid name ".a": empty segment at byte 0"#),
        ("a.*", #"invalid name "a.*""#),
    ])
    func validateNameThrowsInvalidNameSayingWhatIsWrong(name: String, message: String) {
        let error = #expect(throws: HeraldError.self) { try Herald.validate(name: name) }
        #expect(error?.code == .invalidName)
        #expect(error?.message.hasPrefix(message) == true, "\(error?.message ?? "no error")")
    }

    @Test func validateNameAcceptsNamesAndRefusesReservedOnesOnlyForPosting() throws {
        try Herald.validate(name: "session.willResignActive")
        try Herald.validate(name: "herald.dropped")
        let error = #expect(throws: HeraldError.self) { try Herald.validate(name: "herald.dropped", forPosting: true) }
        #expect(error?.code == .reservedName)
        #expect(error?.message.contains("herald.dropped") == true)
    }

    @Test func validatePatternThrowsInvalidPatternSayingWhatIsWrong() throws {
        for pattern in ["session.*", "build.**", "**", "a.b"] {
            try Herald.validate(pattern: pattern)
        }
        let error = #expect(throws: HeraldError.self) { try Herald.validate(pattern: "a.**.b") }
        #expect(error?.code == .invalidPattern)
        #expect(error?.message == #"invalid pattern "a.**.b": '**' is allowed only as the last segment"#)
    }

    @Test(arguments: [
        ("session.*", "session.state", true),
        ("session.*", "session.state.more", false),
        ("build.**", "build.a.b", true),
        ("build.**", "build", false),
        ("**", "anything.at.all", true),
        ("a.b", "a.c", false),
    ])
    func patternsMatchAsTheDaemonRoutes(pattern: String, name: String, matches: Bool) throws {
        let parsed = try HeraldPattern(pattern)
        #expect(parsed.text == pattern)
        #expect(parsed.matches(name) == matches)
    }

    @Test func overflowPoliciesParseTheirCommandLineSpelling() {
        #expect(Herald.OverflowPolicy.allCases.map(\.description) == ["drop-oldest", "coalesce", "disconnect"])
        for policy in Herald.OverflowPolicy.allCases {
            #expect(Herald.OverflowPolicy(parsing: policy.description) == policy)
        }
        #expect(Herald.OverflowPolicy(parsing: "dropOldest") == nil)
    }

    @Test func theDefaultSocketPathFollowsTheEnvironmentAsWireMdSays() {
        let environment = ProcessInfo.processInfo.environment
        let expected =
            environment["HERALD_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
            ?? environment["XDG_RUNTIME_DIR"].flatMap { $0.isEmpty ? nil : "\($0)/herald/socket" }
            ?? "/tmp/herald-\(getuid())/socket"
        #expect(Herald.defaultSocketPath == expected)
    }

    /// `Herald.OverflowPolicy.wire` is the one place the library's policy becomes the one `SUBSCRIBE` carries.
    @Test func eachOverflowPolicyBecomesTheWiresPolicyOfTheSameName() {
        #expect(Herald.OverflowPolicy.allCases.map(\.wire) == [.dropOldest, .coalesce, .disconnect])
        for policy in Herald.OverflowPolicy.allCases {
            #expect(policy.wire.description == policy.description)
        }
    }

    @Test func theLoggingHookGetsTheLibrarysLinesAtItsLevelAndAbove() async throws {
        let loud = LogRecorder()
        let silent = LogRecorder()
        let daemon = try await TestDaemon.start()
        let logged = try await Herald.connect(
            socketPath: daemon.socketPath,
            options: Herald.Options(
                logger: Herald.Logger(level: .info) { level, message in loud.record(level, message) }
            )
        )
        let quiet = try await Herald.connect(
            socketPath: daemon.socketPath,
            options: Herald.Options(
                logger: Herald.Logger(level: .error) { level, message in silent.record(level, message) }
            )
        )
        _ = try await daemon.stop()
        let lost = try await eventually {
            loud.lines.withLock { $0.contains { $0.message.contains("lost the connection to heraldd") } }
        }
        #expect(lost)
        #expect(loud.lines.withLock { $0.allSatisfy { $0.level >= .info } })
        #expect(silent.lines.withLock { $0.isEmpty })
        await logged.close()
        await quiet.close()
    }
}

/// What a logging hook was handed.
private final class LogRecorder: Sendable {
    let lines = Mutex<[(level: Herald.Logger.Level, message: String)]>([])

    func record(_ level: Herald.Logger.Level, _ message: String) {
        lines.withLock { $0.append((level, message)) }
    }
}
