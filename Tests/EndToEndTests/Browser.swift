import Foundation
import HeraldLaunch
import HeraldTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// A real headless Chromium, driven over the DevTools protocol on a WebSocket (``WebSocketClient``): navigate,
/// evaluate JavaScript in the page, take a screenshot. No third-party package and no WebDriver.
///
/// Chromium runs in a session of its own (ChildProcess starts every child with setsid), so ``close()`` kills its whole
/// process group (the renderers, the GPU and utility processes) and waits until none is left.
final class Browser: @unchecked Sendable {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    let process: ChildProcess
    let profile: TemporaryDirectory
    private let socket: WebSocketClient
    // Used by one test task at a time.
    private var nextID = 0
    /// The DevTools session of the page that commands go to, once attached.
    private var pageSession: String?

    private init(process: ChildProcess, profile: TemporaryDirectory, socket: WebSocketClient) {
        self.process = process
        self.profile = profile
        self.socket = socket
    }

    /// Starts Chromium on a blank page and connects to that page's DevTools endpoint, which Chromium announces in
    /// `DevToolsActivePort` in its profile folder (`--remote-debugging-port=0` picks a free port).
    static func launch(width: Int = 1280, height: Int = 1700) async throws -> Browser {
        let chromium = try SessionTools.path("chromium")
        let profile = TemporaryDirectory(prefix: "hb")
        var arguments = [
            "--headless", "--disable-gpu", "--no-first-run", "--no-default-browser-check", "--disable-extensions",
            "--disable-background-networking", "--disable-sync", "--disable-component-update", "--mute-audio",
            "--hide-scrollbars", "--remote-debugging-port=0", "--user-data-dir=\(profile.path)",
            "--window-size=\(width),\(height)", "about:blank",
        ]
        // Chromium's sandbox refuses to run as root (CI containers); elsewhere it stays on.
        if geteuid() == 0 { arguments.insert("--no-sandbox", at: 0) }
        let process = try ChildProcess(chromium, arguments, environment: ["DBUS_SESSION_BUS_ADDRESS": nil])
        process.closeStdin()
        do {
            // Its first line is the port, its second the browser's WebSocket path. (Chromium's HTTP endpoints, such
            // as /json/list, answer in a way FoundationNetworking's curl cannot read, so everything goes over the
            // browser's WebSocket: a page is created and attached to, and commands carry its session.)
            let portFile = profile.file("DevToolsActivePort")
            var endpoint: (port: UInt16, path: String)?
            _ = try await eventually(timeout: .seconds(90)) {
                if let text = try? String(contentsOfFile: portFile, encoding: .utf8) {
                    let lines = text.split(separator: "\n")
                    if lines.count >= 2, let port = UInt16(lines[0]) {
                        endpoint = (port, String(lines[1]))
                        return true
                    }
                }
                return process.exitStatus != nil
            }
            guard let endpoint else {
                throw Failure(
                    description: "chromium did not announce its DevTools port: \(process.stderr.suffix(2000))"
                )
            }
            let socket = try WebSocketClient(host: "127.0.0.1", port: endpoint.port, path: endpoint.path)
            let browser = Browser(process: process, profile: profile, socket: socket)
            let target = try await browser.send("Target.createTarget", ["url": "about:blank"])
            guard let targetID = target["targetId"] as? String else { throw Failure(description: "no page: \(target)") }
            let attached = try await browser.send("Target.attachToTarget", ["targetId": targetID, "flatten": true])
            guard let page = attached["sessionId"] as? String else {
                throw Failure(description: "no session: \(attached)")
            }
            browser.pageSession = page
            try await browser.send("Page.enable")
            return browser
        } catch {
            await Self.kill(process)
            throw error
        }
    }

    /// Sends one DevTools command and returns its `result`, skipping the events that come in between.
    @discardableResult
    func send(
        _ method: String,
        _ parameters: [String: Any] = [:],
        timeout: Duration = .seconds(60)
    ) async throws
        -> [String: Any]
    {
        nextID += 1
        let id = nextID
        var command: [String: Any] = ["id": id, "method": method, "params": parameters]
        if let pageSession, !method.hasPrefix("Target.") { command["sessionId"] = pageSession }
        let message = try JSONSerialization.data(withJSONObject: command)
        try socket.send(String(decoding: message, as: UTF8.self))
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            // Blocking, with the socket's receive timeout: one command at a time, on a thread of its own (`blocking`),
            // never on the cooperative pool a thousand parallel tests share.
            let socket = socket
            let data = Data(try await blocking { try socket.receive() }.utf8)
            guard let object = try JSONSerialization.jsonObject(with: data) as? [String: Any],
                object["id"] as? Int == id
            else { continue }
            if let error = object["error"] {
                throw Failure(description: "\(method) failed: \(error)")
            }
            return object["result"] as? [String: Any] ?? [:]
        }
        throw Failure(description: "\(method) got no answer in \(timeout)")
    }

    /// Opens `url` in the page and waits until it has loaded (a busy machine may take long: the wait is generous).
    func navigate(to url: String, timeout: Duration = .seconds(90)) async throws {
        try await send("Page.navigate", ["url": url])
        let loaded = try await eventually(timeout: timeout) {
            try await isTrue("location.href === \(Self.literal(url)) && document.readyState === 'complete'")
        }
        guard loaded else { throw Failure(description: "\(url) did not load in \(timeout)") }
    }

    /// `text` as a JavaScript string literal.
    static func literal(_ text: String) -> String {
        let data = try? JSONSerialization.data(withJSONObject: [text])
        return String(decoding: data ?? Data("[\"\"]".utf8), as: UTF8.self).dropFirst().dropLast().description
    }

    /// Evaluates `expression` in the page (awaiting a promise) and returns its value as JSON would carry it.
    func evaluate(_ expression: String) async throws -> Any? {
        let result = try await send(
            "Runtime.evaluate",
            ["expression": expression, "returnByValue": true, "awaitPromise": true]
        )
        if let exception = result["exceptionDetails"] {
            throw Failure(description: "\(expression) threw: \(exception)")
        }
        return (result["result"] as? [String: Any])?["value"]
    }

    /// Whether `expression` is true in the page now; false while it throws (an element not there yet).
    func isTrue(_ expression: String) async throws -> Bool {
        try await evaluate("(() => { try { return Boolean(\(expression)); } catch (e) { return false; } })()") as? Bool
            ?? false
    }

    /// Clicks the middle of the element `selector` finds, with the mouse, as a user would.
    func click(_ selector: String) async throws {
        let box =
            try await evaluate(
                "(() => { const r = document.querySelector(\(Self.literal(selector))).getBoundingClientRect(); "
                    + "return [r.x + r.width / 2, r.y + r.height / 2]; })()"
            ) as? [Double]
        guard let box, box.count == 2 else { throw Failure(description: "nothing to click at \(selector)") }
        for type in ["mousePressed", "mouseReleased"] {
            try await send(
                "Input.dispatchMouseEvent",
                ["type": type, "x": box[0], "y": box[1], "button": "left", "clickCount": 1]
            )
        }
    }

    /// The page as a PNG, the whole window.
    func screenshot() async throws -> Data {
        let result = try await send("Page.captureScreenshot", ["format": "png"])
        guard let text = result["data"] as? String, let data = Data(base64Encoded: text) else {
            throw Failure(description: "the screenshot came without data")
        }
        return data
    }

    /// Ends Chromium and every process it started, and waits until none is left.
    ///
    /// - Returns: whether the whole process group is gone.
    @discardableResult
    func close() async -> Bool {
        socket.close()
        return await Self.kill(process)
    }

    @discardableResult
    private static func kill(_ process: ChildProcess) async -> Bool {
        // Its own session and process group: the pid is the group's id.
        Glibc.kill(-process.pid, SIGKILL)
        _ = try? await process.waitForExit(timeout: .seconds(10))
        return (try? await eventually(timeout: .seconds(10)) { Self.groupIsGone(process.pid) }) ?? false
    }

    /// Whether no process of group `group` is left (zombies waiting to be reaped by init count as gone).
    static func groupIsGone(_ group: Int32) -> Bool {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return true }
        for entry in entries {
            guard let pid = Int32(entry),
                let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { continue }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            // After the name: state, ppid, pgrp.
            guard fields.count > 2, Int32(fields[2]) == group else { continue }
            if fields[0] != "Z" && fields[0] != "X" { return false }
        }
        return true
    }
}
