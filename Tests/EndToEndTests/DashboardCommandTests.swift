import Foundation
import HeraldLaunch
import HeraldPosix
import HeraldTestSupport
import Testing

/// `herald dashboard`'s command line: `--port`, its errors, its help, and heraldd missing.
@Suite struct DashboardCommandTests {
    @Test func itServesOnThePortAskedForOn127001Only() async throws {
        let daemon = try await TestDaemon.start()
        // A port free a moment ago: the kernel's choice for a socket closed at once.
        let port = try {
            let probe = try TCPSocket.listen(host: "127.0.0.1", port: 0)
            return try TCPSocket.localPort(of: probe)
        }()
        let dashboard = try await DashboardProcess.start(daemon, arguments: ["--port", String(port)])
        defer { dashboard.process.signal(SIGKILL) }
        #expect(dashboard.port == port)
        #expect(dashboard.url.hasPrefix("http://127.0.0.1:\(port)/?token="))
        #expect(dashboard.token.count == 32)
        #expect(try await dashboard.request("GET", "/?token=\(dashboard.token)").status == 200)
        // Listening on 127.0.0.1 only: the same port on another local address of the machine is not the dashboard.
        let listening = try String(contentsOfFile: "/proc/net/tcp", encoding: .utf8)
        let hexPort = String(format: "%04X", Int(port))
        let lines = listening.split(separator: "\n").filter { $0.contains(":\(hexPort) ") && $0.contains(" 0A ") }
        #expect(lines.count == 1 && lines[0].contains("0100007F:\(hexPort)"), "\(lines)")
    }

    /// A session with more names than heraldd lists (`--max-names`) is refused `NAMES`: the dashboard still starts,
    /// says why in its first view, and shows names as their posts arrive.
    @Test func aRefusedNamesListStillStartsTheDashboard() async throws {
        let daemon = try await TestDaemon.start(arguments: ["--max-names", "1"])
        for name in ["room.lamp", "room.door"] {
            #expect(
                try await run("herald", ["post", "--retain", name, "on=true"], environment: daemon.environment).status
                    == 0
            )
        }
        let dashboard = try await DashboardProcess.start(daemon)
        defer { dashboard.process.signal(SIGKILL) }
        let page = try await dashboard.request("GET", "/?token=\(dashboard.token)")
        #expect(page.status == 200)
        #expect(page.body.contains("heraldd refused to list its names"), "\(page.body.prefix(400))")
        #expect(
            try await run("herald", ["post", "room.window", "open=true"], environment: daemon.environment).status == 0
        )
        let shown = try await eventually(timeout: .seconds(30)) {
            (try? await dashboard.request("GET", "/?token=\(dashboard.token)").body.contains(
                "data-name=\"room.window\""
            ))
                == true
        }
        #expect(shown, "a name posted after start joins the tree")
    }

    @Test(arguments: [["--port", "65536"], ["--port", "x"], ["--posts", "0"], ["extra"]])
    func aBadCommandLineIsAUsageError(arguments: [String]) async throws {
        let result = try await run("herald", ["dashboard"] + arguments)
        #expect(result.status == 64, "\(arguments): \(result.stderr)")
        #expect(result.stderr.hasPrefix("Error: "))
        #expect(result.stdout.isEmpty)
    }

    @Test func helpSaysWhatItServesAndHowItIsGuarded() async throws {
        let result = try await run("herald", ["dashboard", "--help"])
        #expect(result.status == 0)
        for word in ["--port", "--posts", "--socket", "token", "127.0.0.1", "Origin"] {
            #expect(result.stdout.contains(word), "help lacks \(word)")
        }
    }

    @Test func withoutHeralddItExitsWith69() async throws {
        let directory = TemporaryDirectory()
        let result = try await run("herald", ["dashboard", "--socket", directory.file("none")])
        #expect(result.status == 69, "\(result.stderr)")
        #expect(result.stdout.isEmpty, "no URL for a dashboard that cannot work")
    }
}
