import Foundation
import Herald
import HeraldLaunch
import HeraldTestSupport
import Testing

/// Issue 3, points 4 and 8 from the shell: observe --reconnect across a SIGKILLed daemon, and wills.
struct ReliabilityRestartTests {
    @Test func observeReconnectSurvivesADaemonKilledAndRestarted() async throws {
        let directory = TemporaryDirectory()
        let first = try await TestDaemon.start(directory: directory)
        let observer = try ChildProcess(
            TestBinaries.path("herald"),
            ["observe", "restart.*", "--json", "--reconnect", "--ready"],
            environment: first.environment
        )
        try await observer.waitForStderrLine(containing: "ready")
        try await first.stop(signal: SIGKILL)
        // While it is down, posting fails at once with 69.
        let down = try await run("herald", ["post", "restart.lost"], environment: first.environment)
        #expect(down.status == 69)
        let second = try await TestDaemon.start(directory: directory)
        try await observer.waitForStdoutLine(containing: #"{"notice":"reconnected"}"#)
        #expect(try await run("herald", ["post", "restart.back", "k=v"], environment: second.environment).status == 0)
        try await observer.waitForStdoutLine(containing: #""name":"restart.back""#)
        observer.signal(SIGINT)
        #expect(try await observer.waitForExit() == 130)
    }

    @Test func observeReconnectGoesOnWhenTheNewDaemonRefusesItsWill() async throws {
        let directory = TemporaryDirectory()
        let first = try await TestDaemon.start(directory: directory)
        let observer = try ChildProcess(
            TestBinaries.path("herald"),
            ["observe", "restart.*", "--json", "--reconnect", "--ready", "--will", "presence.observer"],
            environment: first.environment
        )
        try await observer.waitForStderrLine(containing: "ready")
        try await first.stop(signal: SIGKILL)
        // The next heraldd holds no wills at all: it refuses the will the reconnection registers again.
        let second = try await TestDaemon.start(arguments: ["--max-wills", "0"], directory: directory)
        try await observer.waitForStderrLine(containing: "TOO_MANY_WILLS")
        try await observer.waitForStdoutLine(containing: #"{"notice":"reconnected"}"#)
        // After the refusal the observer still prints what is posted: it did not give up, nor retry the refusal.
        #expect(try await run("herald", ["post", "restart.back", "k=v"], environment: second.environment).status == 0)
        try await observer.waitForStdoutLine(containing: #""name":"restart.back""#)
        #expect(observer.stderrLines.filter { $0.contains("refused the will") }.count == 1, "\(observer.stderr)")
        observer.signal(SIGINT)
        #expect(try await observer.waitForExit() == 130)
    }

    @Test func aKilledObserversWillIsPostedAndRetained() async throws {
        let daemon = try await TestDaemon.start()
        let watcher = try await Herald.connect(socketPath: daemon.socketPath)
        let presence = try await watcher.notifications(matching: "presence.*")
        let observer = try ChildProcess(
            TestBinaries.path("herald"),
            [
                "observe", "chat.room", "--ready", "--will", "presence.alice", "--will-json", #"{"state":"gone"}"#,
                "--will-retain", "--will-delay", "0.2",
            ],
            environment: daemon.environment
        )
        try await observer.waitForStderrLine(containing: "ready")
        observer.signal(SIGKILL)
        var iterator = presence.makeAsyncIterator()
        let will = await iterator.next()
        #expect(will?.name == "presence.alice")
        #expect(will?.userInfo?["state"] == "gone")
        #expect(will?.sender.pid == observer.pid)
        let stored = try await run("herald", ["get", "presence.alice"], environment: daemon.environment)
        #expect(stored.stdout == #"{"state":"gone"}"# + "\n")
    }

    @Test func anInterruptedObserversWillIsNotPosted() async throws {
        let daemon = try await TestDaemon.start()
        let watcher = try await Herald.connect(socketPath: daemon.socketPath)
        let presence = try await watcher.notifications(matching: "presence.*")
        let observer = try ChildProcess(
            TestBinaries.path("herald"),
            ["observe", "chat.room", "--ready", "--will", "presence.bob"],
            environment: daemon.environment
        )
        try await observer.waitForStderrLine(containing: "ready")
        observer.signal(SIGINT)
        _ = try await observer.waitForExit()
        // A marker posted after the observer's connection is gone comes first, and alone.
        #expect(try await run("herald", ["status"], environment: daemon.environment).status == 0)
        #expect(try await run("herald", ["post", "presence.marker"], environment: daemon.environment).status == 0)
        var iterator = presence.makeAsyncIterator()
        #expect(await iterator.next()?.name == "presence.marker")
    }
}
