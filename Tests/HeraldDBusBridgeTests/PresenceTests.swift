import Foundation
import HeraldDBus
import HeraldLaunch
import HeraldTestSupport
import Testing

/// A lock on the desktop becomes "alice went away" in herald-chat's room, through herald-dbus-bridge.
@Suite(.serialized, .requiresDesktopBed)
struct PresenceTests {
    /// The real built herald-chat-server on a free port.
    static func startChatServer() async throws -> (ChildProcess, String) {
        let process = try ChildProcess(
            TestBinaries.path("herald-chat-server"),
            ["--port", "0", "--log-level", "info"]
        )
        let line = try await process.waitForStderrLine(containing: "listening on http://")
        let after = line.components(separatedBy: "http://").last?.split(separator: " ").first ?? ""
        let port = after.split(separator: ":").last?.prefix { $0.isNumber } ?? ""
        return (process, "http://127.0.0.1:\(port)")
    }

    @Test func aLockIsAliceWentAwayInTheChatRoomAndAnUnlockAliceCameBack() async throws {
        let bed = try await DesktopBed.start()
        try await bed.startLogind()
        _ = try await bed.startBridge()
        let (server, url) = try await Self.startChatServer()
        defer { server.signal(SIGKILL) }
        let bob = try ChildProcess(
            TestBinaries.path("herald-chat"),
            ["--user", "bob", "--server", url, "--json", "--no-presence"]
        )
        defer { bob.signal(SIGKILL) }
        try await bob.waitForStdoutLine(containing: "bob connected")
        let alice = try ChildProcess(
            TestBinaries.path("herald-chat"),
            ["--user", "alice", "--server", url, "--json", "--socket", bed.daemon.socketPath]
        )
        defer { alice.signal(SIGKILL) }
        try await alice.waitForStdoutLine(containing: "presence is on")

        try await bed.setSession(["LockedHint": .boolean(true)])
        try await bob.waitForStdoutLine(containing: "alice went away")
        try await bed.setSession(["LockedHint": .boolean(false)])
        try await bob.waitForStdoutLine(containing: "alice came back")
        // A marker after both: anything doubled would have come before it.
        bob.writeStdin("marker\n")
        try await bob.waitForStdoutLine(containing: "\"marker\"")
        #expect(bob.stdoutLines.filter { $0.contains("alice went away") }.count == 1)
        #expect(bob.stdoutLines.filter { $0.contains("alice came back") }.count == 1)
        await bed.stop()
    }
}
