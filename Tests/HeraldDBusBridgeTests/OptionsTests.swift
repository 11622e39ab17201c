import HeraldCommandLine
import HeraldDBusBridge
import HeraldTestSupport
import Testing

/// herald-dbus-bridge's command line, and its exit codes as a process.
struct OptionsTests {
    @Test func theOptionsAreParsed() throws {
        let options = try #require(
            try DBusBridgeOptions.parse(["--session-id", "c7", "--user", "bob", "--lock-timeout", "2.5", "--verbose"])
        )
        #expect(options.sessionID == "c7")
        #expect(options.user == "bob")
        #expect(options.lockTimeout == .milliseconds(2500))
        #expect(options.verbose)
        #expect(try DBusBridgeOptions.parse([]) == DBusBridgeOptions())
    }

    @Test(arguments: [["--lock-timeout", "0"], ["--lock-timeout", "soon"], ["--bogus"], ["extra"]])
    func aBadCommandLineIsAUsageError(arguments: [String]) {
        #expect(throws: UsageError.self) { try DBusBridgeOptions.parse(arguments) }
    }

    @Test func theExecutableExits64ForAUsageErrorAnd69WithoutADaemon() async throws {
        let usage = try await run("herald-dbus-bridge", ["--bogus"])
        #expect(usage.status == 64)
        #expect(usage.stderr.contains("Error: Unknown option '--bogus'"))
        let directory = TemporaryDirectory()
        let absent = try await run("herald-dbus-bridge", ["--socket", directory.file("socket")])
        #expect(absent.status == 69, "\(absent.stderr)")
        #expect(absent.stderr.contains("no heraldd is listening"))
    }
}
