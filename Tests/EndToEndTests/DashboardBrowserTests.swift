import Foundation
import HeraldLaunch
import HeraldTestSupport
import Testing

/// `herald dashboard` in a real headless Chromium (issue 32, "In a real browser"): the names posted before the page
/// loaded, a post made while it is open, a plugin stopped with the page's button, a post sent with the page's form,
/// and a screenshot for CI's artifacts. One browser for the whole test: Chromium is heavy on a small machine.
@Suite(.serialized)
struct DashboardBrowserTests {
    /// Where CI collects screenshots: `$HERALD_ARTIFACTS`, else `.build/artifacts` in the repository.
    static var artifactFolder: String {
        ProcessInfo.processInfo.environment["HERALD_ARTIFACTS"].flatMap { $0.isEmpty ? nil : $0 }
            ?? SessionTools.repositoryRoot + "/.build/artifacts"
    }

    @Test(.requires("chromium"), .hangGuard)
    func thePageShowsNamesAndLivePostsAndItsButtonStopsAPlugin() async throws {
        let bed = try PluginBed()
        let script = try bed.script("sleeper", "exec sleep 1000")
        try bed.plugin("sleeper", exec: script, ["Activation=start"])
        let daemon = try await bed.startDaemon()
        let environment = daemon.environment
        #expect(
            try await run("herald", ["post", "--retain", "room.lamp", "on=true", "level=80"], environment: environment)
                .status == 0
        )
        #expect(
            try await run("herald", ["post", "--retain", "room.door.front", "open=false"], environment: environment)
                .status == 0
        )
        #expect(try await run("herald", ["post", "session.started"], environment: environment).status == 0)
        _ = try await eventually(timeout: .seconds(30)) {
            (try? await PluginProbe.list(daemon))?["sleeper"]?.state == "running"
        }

        // The issue's 2 s and 1 s are checked when the test runs alone (.ci/run, HERALD_TEST_ALONE=1). In the whole
        // parallel run on two cores the browser shares the machine with a thousand tests (a live post took 4.1 s
        // there once), so the whole run allows 15 s and prints what it measured.
        let alone = ProcessInfo.processInfo.environment["HERALD_TEST_ALONE"] == "1"
        let firstViewBound: Duration = alone ? .seconds(2) : .seconds(15)
        let livePostBound: Duration = alone ? .seconds(1) : .seconds(15)
        let dashboard = try await DashboardProcess.start(daemon)
        defer { dashboard.process.signal(SIGKILL) }
        let browser = try await Browser.launch()
        do {
            try await browser.navigate(to: dashboard.url)
            // Loading is the browser's business and may be slow on a busy machine (navigate waits for it); the names
            // are then in the DOM within 2 s: they are in the first view, rendered by the server.
            let loaded = try await eventually(timeout: firstViewBound) {
                try await browser.isTrue(
                    "document.querySelector('tr[data-name=\"room.lamp\"]') && "
                        + "document.querySelector('tr[data-name=\"room.door.front\"]') && "
                        + "document.querySelector('tr[data-name=\"room.lamp\"] pre').textContent.includes('\"level\"')"
                )
            }
            #expect(loaded, "the names posted before the page loaded are in its DOM")
            // The stream is live once the page says so.
            #expect(
                try await eventually(timeout: .seconds(30)) {
                    try await browser.isTrue("document.getElementById('connection').textContent === 'Live'")
                }
            )

            let postedCount =
                "Number([...document.querySelectorAll('#status-body tr')]"
                + ".find((tr) => tr.cells[0].textContent === 'posted').cells[1].textContent)"
            let postedAtLoad = try await browser.evaluate(postedCount) as? Int ?? -1
            #expect(postedAtLoad >= 3, "the daemon's status is in the first view")

            // A post made now appears in the tree and the list of posts.
            let clock = ContinuousClock()
            let posted = clock.now
            #expect(
                try await run("herald", ["post", "room.window", "tilted=yes"], environment: environment).status == 0
            )
            let shown = try await eventually(timeout: livePostBound + .seconds(10)) {
                try await browser.isTrue(
                    "document.querySelector('tr[data-name=\"room.window\"]') && "
                        + "[...document.querySelectorAll('#posts-body th')].some((th) => th.textContent === 'room.window')"
                )
            }
            let latency = clock.now - posted
            #expect(shown, "the live post reached the page")
            #expect(latency < livePostBound, "the live post took \(latency) to appear")
            print("dashboard: a live post appeared in the page \(latency) after `herald post` returned")

            // The status follows, read every 2 s while the page is open.
            #expect(
                try await eventually(timeout: .seconds(15)) {
                    try await browser.isTrue("\(postedCount) > \(postedAtLoad)")
                },
                "the page's status shows the live post counted"
            )

            // A subscriber's count joins its name's row with the status, read every 2 s while the page is open.
            let subscriber = try WireClient.ready(socketPath: daemon.socketPath)
            _ = try subscriber.subscribe(1, "room.lamp")
            #expect(
                try await eventually(timeout: .seconds(15)) {
                    try await browser.isTrue(
                        "document.querySelector('tr[data-name=\"room.lamp\"]').cells[4].textContent === '1'"
                    )
                },
                "the page shows room.lamp's one subscriber"
            )
            withExtendedLifetime(subscriber) {}

            // The page's own post form.
            _ = try await browser.evaluate(
                """
                (() => { document.getElementById('post-name').value = 'room.note';
                  document.getElementById('post-payload').value = '{"text":"from the page"}';
                  document.querySelector('form.post input[name=retain]').checked = true;
                  document.querySelector('form.post').requestSubmit(); return true; })()
                """
            )
            let noted = try await eventually(timeout: .seconds(20)) {
                try await run("herald", ["get", "room.note"], environment: environment).stdout.contains("from the page")
            }
            #expect(noted, "the page's form posted a retained value")

            // The plugin's stop button.
            let button = "document.querySelector('button[aria-label=\"stop sleeper\"]')"
            #expect(try await eventually(timeout: .seconds(20)) { try await browser.isTrue(button) })
            _ = try await browser.evaluate("\(button).click()")
            let stopped = try await eventually(timeout: .seconds(30)) {
                (try? await PluginProbe.list(daemon))?["sleeper"]?.state == "stopped"
            }
            let said = try await browser.evaluate(
                "document.getElementById('action-result').textContent + ' | ' + document.getElementById('notices').textContent"
            )
            #expect(stopped, "herald plugins says sleeper is stopped; the page said: \(said ?? "nothing")")
            let plugins = try await run("herald", ["plugins"], environment: environment)
            #expect(plugins.stdout.contains("sleeper: stopped"), "\(plugins.stdout)")
            #expect(
                try await eventually(timeout: .seconds(10)) {
                    try await browser.isTrue(
                        "document.querySelector('tr[data-plugin=\"sleeper\"] td').textContent === 'stopped'"
                    )
                },
                "the page shows the plugin stopped"
            )

            // Choosing a name plots its rate beside all posts, from the series the new stream starts with.
            _ = try await browser.evaluate("document.querySelector('a.plot-name[data-name=\"room.window\"]').click()")
            for number in 1...3 {
                #expect(
                    try await run("herald", ["post", "room.window", "n=\(number)"], environment: environment).status
                        == 0
                )
            }
            let plotted = try await eventually(timeout: .seconds(20)) {
                try await browser.isTrue(
                    "document.getElementById('selected-label').textContent === 'room.window' && "
                        + "document.getElementById('plot-named').getAttribute('points').split(' ').length === 300 && "
                        + "document.getElementById('plot-named').getAttribute('points').split(' ')"
                        + ".some((p) => Number(p.split(',')[1]) < 150) && location.search.includes('name=room.window')"
                )
            }
            #expect(plotted, "the chosen name's rate is plotted: 300 seconds, not all zero")

            // A screenshot for CI's artifacts (and for the README, by hand), once the rate plot has a few seconds.
            _ = try await eventually(timeout: .seconds(5)) { false }
            let png = try await browser.screenshot()
            try FileManager.default.createDirectory(atPath: Self.artifactFolder, withIntermediateDirectories: true)
            let path = Self.artifactFolder + "/dashboard.png"
            try png.write(to: URL(fileURLWithPath: path))
            print("dashboard: screenshot written to \(path) (\(png.count) bytes)")
            #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47]))

            // With JavaScript off: the first view holds the tree and the plugins, and the plugin's form still works
            // (a plain form POST, answered 303 back to the page).
            try await browser.send("Emulation.setScriptExecutionDisabled", ["value": true])
            try await browser.navigate(to: dashboard.url)
            #expect(try await browser.isTrue("window.heraldTimerLag === undefined"), "the page's script did not run")
            #expect(
                try await browser.isTrue(
                    "document.querySelector('tr[data-name=\"room.window\"]') && "
                        + "document.querySelector('tr[data-plugin=\"sleeper\"] td').textContent === 'stopped'"
                ),
                "the server-rendered view has the live post's name and the plugin's state"
            )
            // A real click, as a user's: with scripts off, a script's click() submits nothing.
            try await browser.click("button[aria-label=\"start sleeper\"]")
            let started = try await eventually(timeout: .seconds(30)) {
                (try? await PluginProbe.list(daemon))?["sleeper"]?.state == "running"
            }
            #expect(started, "the start button worked without JavaScript")
            #expect(
                try await eventually(timeout: .seconds(20)) {
                    try await browser.isTrue(
                        "location.pathname === '/' && document.readyState === 'complete' && "
                            + "document.getElementById('names') !== null"
                    )
                },
                "the form's answer led back to the page"
            )
        } catch {
            await browser.close()
            throw error
        }
        #expect(await browser.close(), "every chromium process ended")
    }
}
