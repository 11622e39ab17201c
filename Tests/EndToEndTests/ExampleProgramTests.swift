import Foundation
import HeraldLaunch
import HeraldTestSupport
import Testing

/// The README's promise: a notification posted from a shell arrives in a Swift program, with the
/// sender's pid.
struct ExampleProgramTests {
    @Test func theExampleProgramPrintsAShellPostWithItsSendersPid() async throws {
        let daemon = try await TestDaemon.start()
        let example = try ChildProcess(TestBinaries.path("herald-example"), [], environment: daemon.environment)
        try await example.waitForStdoutLine(containing: "observing session.*")
        let poster = try ChildProcess(
            TestBinaries.path("herald"),
            ["post", "session.willResignActive", "user=alice"],
            environment: daemon.environment
        )
        #expect(try await poster.waitForExit() == 0)
        let line = try await example.waitForStdoutLine(containing: "session.willResignActive: alice")
        #expect(line.contains("sent by pid \(poster.pid),"), "line: \(line)")
        try await example.waitForStdoutLine(containing: "typed WillResignActive: user alice")
        example.signal(SIGTERM)
        _ = try await example.waitForExit()
    }
}
