import Foundation
import Herald
import HeraldTestSupport
import Testing

/// `herald observe` and `herald wait` against a real heraldd, with posts from other processes.
@Suite struct HeraldCLIObserveTests {
    @Test func observeJSONPrintsAPostFromAnotherProcess() async throws {
        let daemon = try await TestDaemon.start()
        let observer = try await CLI.startSubscribed(
            ["observe", "--json", "--count", "1", "session.*"],
            daemon: daemon
        )

        try await CLI.post(["session.willResignActive", "user=alice"], daemon: daemon)

        #expect(try await observer.waitForExit() == 0)
        #expect(observer.stdoutLines.count == 1)
        let line = try CLI.object(try #require(observer.stdoutLines.first))
        #expect(line["name"] as? String == "session.willResignActive")
        #expect(try CLI.payloadText(line) == #"{"user":"alice"}"#)
        #expect(line["payloadBase64"] == nil)
        #expect((line["seq"] as? Int ?? 0) >= 1)
        #expect(line["retained"] as? Bool == false)
        let time = try #require(line["time"] as? String)
        #expect(CLI.isISOTime(time), "time: \(time)")
        let sender = try #require(line["sender"] as? [String: Any])
        #expect(sender["uid"] as? Int == Int(getuid()))
        #expect(sender["gid"] as? Int == Int(getgid()))
        let senderPID = try #require(sender["pid"] as? Int)
        #expect(senderPID > 0 && senderPID != Int(observer.pid) && senderPID != Int(getpid()))
    }

    @Test func observeExitsAfterCountWithIncreasingSequenceNumbers() async throws {
        let daemon = try await TestDaemon.start()
        let observer = try await CLI.startSubscribed(["observe", "--json", "--count", "2", "job.*"], daemon: daemon)

        try await CLI.post(["job.started", "id=1"], daemon: daemon)
        try await CLI.post(["job.finished", "id=1"], daemon: daemon)

        #expect(try await observer.waitForExit() == 0)
        let lines = try observer.stdoutLines.map { try CLI.object($0) }
        #expect(lines.map { $0["name"] as? String } == ["job.started", "job.finished"])
        let sequences = lines.compactMap { $0["seq"] as? Int }
        #expect(sequences.count == 2 && sequences[0] < sequences[1], "sequences: \(sequences)")
    }

    @Test func observeMatchesWildcardsAndIgnoresOtherNames() async throws {
        let daemon = try await TestDaemon.start()
        let observer = try await CLI.startSubscribed(
            ["observe", "--json", "--count", "2", "build.**", "session.*"],
            daemon: daemon
        )

        for name in ["other.thing", "build", "session.state.extra", "build.app.done", "session.lock"] {
            try await CLI.post([name], daemon: daemon)
        }

        #expect(try await observer.waitForExit() == 0)
        let names = try observer.stdoutLines.map { try CLI.object($0)["name"] as? String }
        #expect(names == ["build.app.done", "session.lock"])
    }

    @Test func observePrintsPostsToSeveralPatternsInTheOrderTheyWerePosted() async throws {
        let daemon = try await TestDaemon.start()
        let names = ["session.locked", "session.unlocked", "session.unlocked", "session.locked", "screen.off"]
        let observer = try await CLI.startSubscribed(
            ["observe", "--json", "--count", "\(names.count)", "session.locked", "session.unlocked", "screen.*"],
            daemon: daemon
        )
        // Posted from one connection in one process, as fast as it can: one stream per pattern, each consumed by a
        // task of its own, printed these in whatever order the tasks ran.
        let poster = try await Herald.connect(socketPath: daemon.socketPath)
        for name in names {
            try await poster.post(name)
        }
        await poster.close()
        #expect(try await observer.waitForExit() == 0)
        let printed = try observer.stdoutLines.map { try CLI.object($0)["name"] as? String }
        #expect(printed == names)
    }

    @Test func observePrintsAPostMatchingTwoPatternsOnce() async throws {
        let daemon = try await TestDaemon.start()
        let observer = try await CLI.startSubscribed(
            ["observe", "--json", "--count", "2", "alerts.*", "alerts.disk"],
            daemon: daemon
        )

        try await CLI.post(["alerts.disk", "level=high"], daemon: daemon)
        try await CLI.post(["alerts.cpu", "level=low"], daemon: daemon)

        // With --count 2, a second copy of alerts.disk would have been the second line.
        #expect(try await observer.waitForExit() == 0)
        let names = try observer.stdoutLines.map { try CLI.object($0)["name"] as? String }
        #expect(names == ["alerts.disk", "alerts.cpu"])
    }

    @Test func observePrintsHumanLinesWithRetainedValuesFirst() async throws {
        let daemon = try await TestDaemon.start()
        try await CLI.post(["session.state", "state=away", "--retain"], daemon: daemon)
        let observer = try await CLI.startSubscribed(["observe", "--count", "2", "session.*"], daemon: daemon)

        try await CLI.post(["session.didBecomeActive", "reason=unlock"], daemon: daemon)

        #expect(try await observer.waitForExit() == 0)
        let lines = observer.stdoutLines
        try #require(lines.count == 2, "stdout: \(observer.stdout)")
        let time = #/\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z/#
        let retained = try #require(
            lines[0].wholeMatch(
                of: #/(?<time>\S+) session\.state \{"state":"away"\} \(pid (?<pid>\d+)\) \[retained\]/#
            ),
            "line: \(lines[0])"
        )
        #expect(retained.output.time.wholeMatch(of: time) != nil)
        let live = try #require(
            lines[1].wholeMatch(of: #/(?<time>\S+) session\.didBecomeActive \{"reason":"unlock"\} \(pid \d+\)/#),
            "line: \(lines[1])"
        )
        #expect(live.output.time.wholeMatch(of: time) != nil)
    }

    @Test func observeShowsTheSenderAndABinaryPayloadAsBase64() async throws {
        let daemon = try await TestDaemon.start()
        let observer = try await CLI.startSubscribed(["observe", "--json", "--count", "1", "blob.*"], daemon: daemon)

        // Posted from this process through the library, so the sender pid is known.
        let herald = try await Herald.connect(socketPath: daemon.socketPath)
        try await herald.postAcknowledged("blob.raw", payload: [0xFF, 0x00, 0x41])
        await herald.close()

        #expect(try await observer.waitForExit() == 0)
        let line = try CLI.object(try #require(observer.stdoutLines.first))
        #expect(line["payload"] == nil)
        #expect(line["payloadBase64"] as? String == "/wBB")
        let sender = try #require(line["sender"] as? [String: Any])
        #expect(sender["pid"] as? Int == Int(getpid()))
    }

    /// A relayed post's origin (wire.md version 2), as a bridge's imports carry it, shows in both styles.
    @Test func observeShowsARelayedPostsOrigin() async throws {
        let daemon = try await TestDaemon.start()
        let json = try await CLI.startSubscribed(["observe", "--json", "--count", "1", "relay.*"], daemon: daemon)
        let human = try await CLI.startSubscribed(["observe", "--count", "1", "relay.*"], daemon: daemon)
        let herald = try await Herald.connect(socketPath: daemon.socketPath)
        let origin = HeraldNotification.Origin(host: "hostB", daemon: "4242", sequence: 17)
        try await herald.postAcknowledged("relay.x", payload: Array("[1]".utf8), origin: origin)
        await herald.close()

        #expect(try await json.waitForExit() == 0)
        let line = try CLI.object(try #require(json.stdoutLines.first))
        let printed = try #require(line["origin"] as? [String: Any])
        #expect(printed["host"] as? String == "hostB")
        #expect(printed["daemon"] as? String == "4242")
        #expect(printed["sequence"] as? Int == 17)
        #expect(try await human.waitForExit() == 0)
        #expect(human.stdoutLines.first?.contains("from hostB)") == true, "\(human.stdout)")
    }

    @Test func observeWithCountTimesOutWith124() async throws {
        let daemon = try await TestDaemon.start()
        // The one notification is a retained value, which the observer prints as it subscribes: a live post from
        // this process had to arrive within the observer's deadline, and a loaded full test run has delayed it past
        // 10 s (seen four times). Now nothing races the deadline, which can be short.
        try await CLI.post(["quiet.once", "state=kept", "--retain"], daemon: daemon)
        let observer = try await CLI.startSubscribed(
            ["observe", "--count", "2", "--timeout", "1", "quiet.*"],
            daemon: daemon
        )
        #expect(try await observer.waitForExit() == 124)
        #expect(observer.stdoutLines.count == 1)
        #expect(observer.stdoutLines.first?.contains("[retained]") == true)
        #expect(observer.stderr.contains("Error: timed out after 1 seconds with 1 of 2 notifications"))
    }

    @Test func observeWithoutCountEndsNormallyAtTheTimeout() async throws {
        let daemon = try await TestDaemon.start()
        let result = try await CLI.run(["observe", "--timeout", "0.2", "quiet.*"], daemon: daemon)
        #expect(result.status == 0)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.isEmpty)
    }

    @Test func waitPrintsTheNextLivePostNotTheRetainedValue() async throws {
        let daemon = try await TestDaemon.start()
        try await CLI.post(["job.done", "id=old", "--retain"], daemon: daemon)
        let waiter = try await CLI.startSubscribed(["wait", "--json", "job.done"], daemon: daemon)

        try await CLI.post(["job.done", "id=new"], daemon: daemon)

        #expect(try await waiter.waitForExit() == 0)
        #expect(waiter.stdoutLines.count == 1)
        let line = try CLI.object(try #require(waiter.stdoutLines.first))
        #expect(try CLI.payloadText(line) == #"{"id":"new"}"#)
        #expect(line["retained"] as? Bool == false)
    }

    @Test func waitTimesOutWith124() async throws {
        let daemon = try await TestDaemon.start()
        let result = try await CLI.run(["wait", "never.posted", "--timeout", "0.2"], daemon: daemon)
        #expect(result.status == 124)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr == "Error: timed out after 0.2 seconds waiting for a post to never.posted\n")
    }

    @Test func waitAndObserveAnswerARefusedSubscriptionWithItsCodeAndExitOne() async throws {
        // A name past the daemon's --max-name-bytes: heraldd refuses the subscription, the one request wait makes.
        let daemon = try await TestDaemon.start(arguments: ["--max-name-bytes", "8"])
        let waited = try await CLI.run(["wait", "job.finished", "--timeout", "5"], daemon: daemon)
        #expect(waited.status == 1)
        #expect(waited.stderr.contains("heraldd refused the request: INVALID_PATTERN"), "\(waited.stderr)")
        let observed = try await CLI.run(["observe", "job.*", "job.finished", "--timeout", "5"], daemon: daemon)
        #expect(observed.status == 1)
        #expect(observed.stderr.contains("INVALID_PATTERN"), "\(observed.stderr)")
        // The refusals cost nobody else: a subscriber started afterwards gets a post.
        let waiter = try await CLI.startSubscribed(["wait", "--json", "job.done"], daemon: daemon)
        try await CLI.post(["job.done", "id=1"], daemon: daemon)
        #expect(try await waiter.waitForExit() == 0)
    }
}
