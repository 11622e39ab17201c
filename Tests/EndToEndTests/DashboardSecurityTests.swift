import Foundation
import HeraldLaunch
import HeraldTestSupport
import Testing

/// `herald dashboard`'s access checks against a real daemon (issue 32, "Security"): without the token, with a foreign
/// Host, or from another origin, a request gets 403 and changes nothing; the same request done right works, so the
/// checks are what refused the others.
@Suite struct DashboardSecurityTests {
    @Test(.hangGuard)
    func requestsWithoutTheTokenOrFromElsewhereAreRefusedAndChangeNothing() async throws {
        let bed = try PluginBed()
        let script = try bed.script("sleeper", "exec sleep 1000")
        try bed.plugin("sleeper", exec: script, ["Activation=start"])
        let daemon = try await bed.startDaemon()
        _ = try await eventually(timeout: .seconds(30)) {
            (try? await PluginProbe.list(daemon))?["sleeper"]?.state == "running"
        }
        let dashboard = try await DashboardProcess.start(daemon)
        defer { dashboard.process.signal(SIGKILL) }
        let token = dashboard.token
        let own = "http://127.0.0.1:\(dashboard.port)"
        let post = "name=attack.value&payload=%7B%22x%22%3A1%7D&retain=on"
        let stop = "name=sleeper&action=stop"

        // Nothing is served without the token, or with a wrong one: its first digit changed (one token in 16 begins
        // with a 0, and "0" + the rest was that token itself).
        let wrong = (token.first == "0" ? "1" : "0") + token.dropFirst()
        for target in ["/", "/events", "/?token=", "/?token=\(wrong)", "/nothing"] {
            let answer = try await dashboard.request("GET", target)
            #expect(answer.status == 403, "GET \(target): \(answer)")
            #expect(!answer.body.contains("<html"), "GET \(target) served the page")
        }
        // DNS rebinding: the right token, but the Host of another site.
        for host in ["evil.example:\(dashboard.port)", "127.0.0.1.nip.io:\(dashboard.port)", "127.0.0.1:1"] {
            #expect(try await dashboard.request("GET", "/?token=\(token)", host: host).status == 403, "Host \(host)")
            #expect(
                try await dashboard.request(
                    "POST",
                    "/post?token=\(token)",
                    host: host,
                    headers: ["Origin": own],
                    body: post
                ).status == 403
            )
        }
        // Cross-origin and origin-less POSTs, with the token.
        for headers in [["Origin": "http://evil.example"], ["Origin": "null"], [:], ["Origin": "http://127.0.0.1:1"]] {
            #expect(
                try await dashboard.request("POST", "/post?token=\(token)", headers: headers, body: post).status == 403
            )
            #expect(
                try await dashboard.request("POST", "/plugin?token=\(token)", headers: headers, body: stop).status
                    == 403
            )
        }
        // A POST without the token, from the page's own origin.
        #expect(try await dashboard.request("POST", "/post", headers: ["Origin": own], body: post).status == 403)
        #expect(try await dashboard.request("POST", "/plugin", headers: ["Origin": own], body: stop).status == 403)

        // Nothing changed: no value, no post seen, the plugin still runs.
        let value = try await run("herald", ["get", "attack.value"], environment: daemon.environment)
        #expect(value.status == 1 && value.stdout.isEmpty, "\(value)")
        let names = try await run("herald", ["names"], environment: daemon.environment)
        #expect(!names.stdout.contains("attack"), "\(names.stdout)")
        #expect(try await PluginProbe.list(daemon)["sleeper"]?.state == "running")

        // The same requests done right do act: the refusals above were the checks' doing.
        let accepted = try await dashboard.request(
            "POST",
            "/post?token=\(token)",
            headers: ["Origin": own, "Accept": "application/json"],
            body: post
        )
        #expect(accepted.status == 202, "\(accepted)")
        #expect(
            try await eventually(timeout: .seconds(20)) {
                try await run("herald", ["get", "attack.value"], environment: daemon.environment).status == 0
            }
        )
        let page = try await dashboard.request("GET", "/?token=\(token)", host: "localhost:\(dashboard.port)")
        #expect(page.status == 200, "localhost is the dashboard's host too")
        #expect(page.body.contains("attack.value"), "the page shows the value just posted")
        let stopped = try await dashboard.request(
            "POST",
            "/plugin?token=\(token)",
            headers: ["Origin": own],
            body: stop
        )
        #expect(stopped.status == 303, "a form without script is sent back to the page: \(stopped)")
        #expect(
            try await eventually(timeout: .seconds(30)) {
                (try? await PluginProbe.list(daemon))?["sleeper"]?.state == "stopped"
            }
        )
    }
}
