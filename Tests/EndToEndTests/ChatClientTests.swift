import Foundation
import HeraldLaunch
import HeraldTestSupport
import Testing

/// The real herald-chat clients against the real server, with presence through a real heraldd.
@Suite struct ChatClientTests {
    private func post(_ daemon: TestDaemon, _ name: String) async throws {
        let result = try await run("herald", ["post", "--socket", daemon.socketPath, name, "user=alice"])
        #expect(result.status == 0, "\(result.stderr)")
    }

    @Test func presenceThroughHeralddIsAnnouncedOnceEvenWithTwoClientsOfOneUser() async throws {
        let daemon = try await TestDaemon.start()
        let server = try await ChatServerProcess.start()
        let bob = try startChatClient("bob", server: server)
        try await bob.waitForStdoutLine(containing: "bob connected")
        let alice1 = try startChatClient("alice", server: server, ["--socket", daemon.socketPath])
        let alice2 = try startChatClient("alice", server: server, ["--socket", daemon.socketPath])
        try await alice1.waitForStdoutLine(containing: "presence is on")
        try await alice2.waitForStdoutLine(containing: "presence is on")

        try await post(daemon, "session.willResignActive")
        try await bob.waitForStdoutLine(containing: "alice went away")
        try await post(daemon, "session.didBecomeActive")
        try await bob.waitForStdoutLine(containing: "alice came back")
        // A marker after both: anything duplicated would have arrived before it.
        bob.writeStdin("marker\n")
        try await bob.waitForStdoutLine(containing: "\"marker\"")
        let texts = chatMessages(bob.stdoutLines).map(\.text)
        #expect(texts.filter { $0 == "alice went away" }.count == 1)
        #expect(texts.filter { $0 == "alice came back" }.count == 1)
        #expect(chatMessages(bob.stdoutLines).first { $0.text == "alice went away" }?.user == nil)

        alice1.writeStdin("/quit\n")
        #expect(try await alice1.waitForExit() == 0)
        bob.signal(SIGINT)
        #expect(try await bob.waitForExit() == 130)
    }

    @Test func aClientStartedWhileTheSessionIsAwayStartsAway() async throws {
        let daemon = try await TestDaemon.start()
        let retained = try await run(
            "herald",
            ["post", "--socket", daemon.socketPath, "session.state", "--retain", "--json", #"{"state":"away"}"#]
        )
        #expect(retained.status == 0)
        let server = try await ChatServerProcess.start()
        let alice = try startChatClient("alice", server: server, ["--socket", daemon.socketPath])
        try await alice.waitForStdoutLine(containing: "(the session is away)")
        try await post(daemon, "session.willResignActive")
        try await post(daemon, "session.didBecomeActive")
        try await alice.waitForStdoutLine(containing: "alice came back")
        #expect(!chatMessages(alice.stdoutLines).contains { $0.text == "alice went away" })
    }

    @Test func aRefusedSubscriptionLeavesPresenceFollowingTheOtherTransition() async throws {
        // One subscription per connection: the reporter's second is refused (by the library, from WELCOME's limit),
        // and its first goes on.
        let daemon = try await TestDaemon.start(arguments: ["--max-subscriptions", "1"])
        let server = try await ChatServerProcess.start()
        let bob = try startChatClient("bob", server: server)
        try await bob.waitForStdoutLine(containing: "bob connected")
        let alice = try startChatClient("alice", server: server, ["--socket", daemon.socketPath])
        try await alice.waitForStdoutLine(containing: "cannot follow session.didBecomeActive")
        try await alice.waitForStdoutLine(containing: "presence is on")
        #expect(alice.stdoutLines.contains { $0.contains("1 of the 1 subscriptions") }, "\(alice.stdoutLines)")

        // After the refusal, a transition still reaches the room: the reporter and its connection went on.
        try await post(daemon, "session.willResignActive")
        try await bob.waitForStdoutLine(containing: "alice went away")
        #expect(!alice.stdoutLines.contains { $0.contains("presence is off") }, "\(alice.stdoutLines)")
        alice.writeStdin("/quit\n")
        #expect(try await alice.waitForExit() == 0)
    }

    @Test func withoutHeralddChatWorksAndOneNoticeSaysPresenceIsOff() async throws {
        let directory = TemporaryDirectory()
        let server = try await ChatServerProcess.start()
        let alice = try startChatClient("alice", server: server, ["--socket", directory.file("none")])
        try await alice.waitForStdoutLine(containing: "presence is off")
        alice.writeStdin("still here\n")
        try await alice.waitForStdoutLine(containing: "still here")
        #expect(alice.stdoutLines.filter { $0.contains("presence is off") }.count == 1)
    }

    @Test func countdownSendsThreeTwoOneAndTheTextASecondApart() async throws {
        let server = try await ChatServerProcess.start()
        let alice = try startChatClient("alice", server: server)
        try await alice.waitForStdoutLine(containing: "alice connected")
        alice.writeStdin("/countdown liftoff\n")
        try await alice.waitForStdoutLine(containing: "🎉 liftoff", timeout: .seconds(10))
        let steps = chatMessages(alice.stdoutLines).filter { $0.user == "alice" }.map(\.text)
        #expect(steps == ["3...", "2...", "1...", "🎉 liftoff"])
        let dates = alice.stdoutLines.compactMap { line -> Double? in
            guard line.contains("\"user\":\"alice\""),
                let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            else { return nil }
            return object["date"] as? Double
        }
        #expect(dates.count == 4)
        if let first = dates.first, let last = dates.last {
            #expect(last - first > 2.5 && last - first < 6)
        }
    }

    @Test func clientsReconnectWhenTheServerRestarts() async throws {
        let first = try await ChatServerProcess.start()
        let port = first.port
        let bob = try startChatClient("bob", server: first)
        try await bob.waitForStdoutLine(containing: "bob connected")
        first.process.signal(SIGTERM)
        #expect(try await first.process.waitForExit() == 0)
        try await bob.waitForStdoutLine(containing: "reconnecting in")
        let second = try await ChatServerProcess.start(port: port)
        try await bob.wait(for: "a second 'bob connected'") { out, _ in
            out.filter { $0.contains("\"bob connected\"") }.count == 2
        }
        bob.writeStdin("after the restart\n")
        try await bob.waitForStdoutLine(containing: "after the restart")
        bob.writeStdin("/quit\n")
        #expect(try await bob.waitForExit() == 0)
        _ = second
    }

    @Test func aRefusedNameExitsOneWithTheReason() async throws {
        let server = try await ChatServerProcess.start()
        let client = try startChatClient("   ", server: server)
        #expect(try await client.waitForExit() == 64)
    }
}

/// `herald demo`, the README's main command, as a user runs it.
@Suite struct ChatDemoTests {
    @Test func theDemoTellsTheWholeStoryAndLeavesNothingBehind() async throws {
        let result = try await run("herald", ["demo"], timeout: .seconds(60))
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        let lines = result.stdoutLines
        #expect(lines.filter { $0.hasSuffix("* alice went away") }.count == 1)
        #expect(lines.filter { $0.hasSuffix("* alice came back") }.count == 1)
        let socket = try #require(lines.first?.components(separatedBy: " ").last)
        #expect(socket.hasPrefix("/tmp/herald-demo-"))
        #expect(!FileManager.default.fileExists(atPath: (socket as NSString).deletingLastPathComponent))
    }

    @Test func ctrlCStopsEveryChildAndRemovesTheDirectory() async throws {
        // Paced, so the whole demo cannot finish before the signal arrives on a loaded machine: at 10 s a step it
        // finished in 33 s once, while the whole parallel run kept this test from its next step for 70 s. At 30 s
        // the chat server itself comes a step later, so the wait for it is longer too.
        let demo = try ChildProcess(TestBinaries.path("herald"), ["demo", "--pace", "30"])
        try await demo.waitForStdoutLine(containing: "the chat server is listening on", timeout: .seconds(120))
        let line = try #require(demo.stdoutLines.first { $0.contains("heraldd is ready on") })
        let socket = try #require(line.components(separatedBy: " ").last)
        // The daemon and the chat server run as hidden roles of the demo's own binary.
        let children = Self.children(of: demo.pid)
        #expect(children.count >= 2, "\(children); the demo said: \(demo.stdout) \(demo.stderr)")
        // Ctrl-C in a terminal goes to the foreground process group, which the demo leads here.
        #expect(kill(-demo.pid, SIGINT) == 0)
        #expect(try await demo.waitForExit(timeout: .seconds(20)) == 130)
        #expect(!FileManager.default.fileExists(atPath: socket))
        #expect(!FileManager.default.fileExists(atPath: (socket as NSString).deletingLastPathComponent))
        #expect(try await eventually { children.allSatisfy { kill($0, 0) == -1 && errno == ESRCH } }, "\(children)")
    }

    @Test func aKilledDemoTakesItsChildrenWithIt() async throws {
        // SIGKILL, as a test run killed by a timeout gets: the demo cannot stop its children, so the kernel must.
        // Its children are started through HeraldLaunch's ChildProcess from Swift's pool threads, as the tests' are.
        let demo = try ChildProcess(TestBinaries.path("herald"), ["demo", "--pace", "60"])
        // Paced (the most --pace allows), so it is still running when the signal comes; heraldd is its first child.
        let line = try await demo.waitForStdoutLine(containing: "heraldd is ready on")
        let directory = try #require(
            line.components(separatedBy: " ").last.map { ($0 as NSString).deletingLastPathComponent }
        )
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let children = Self.children(of: demo.pid)
        // Were they to survive, they would run until the machine restarts.
        defer { for child in children where !Self.isGone(child) { kill(child, SIGKILL) } }
        #expect(!children.isEmpty, "the demo said: \(demo.stdout) \(demo.stderr)")
        demo.signal(SIGKILL)
        #expect(try await demo.waitForExit(timeout: .seconds(20)) == SIGKILL)
        #expect(
            try await eventually { children.allSatisfy(Self.isGone) },
            "still running: \(children.filter { !Self.isGone($0) })"
        )
    }

    /// Whether `pid` has ended: no such process, or a zombie that whoever inherited it has not reaped yet.
    static func isGone(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return true }
        return stat[stat.index(after: close)...].split(separator: " ").first == "Z"
    }

    /// The processes whose parent is `pid`, from /proc.
    static func children(of pid: Int32) -> [Int32] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { entry -> Int32? in
            guard let child = Int32(entry),
                let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { return nil }
            // After "pid (comm) ": the state, then the parent's pid.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            return fields.count > 1 && Int32(fields[1]) == pid ? child : nil
        }
    }
}
