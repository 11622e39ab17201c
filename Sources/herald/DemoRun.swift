import Foundation
import HeraldCommandLine
import HeraldLaunch
import Synchronization

/// One run of `herald demo`: the temporary directory, the children, and the script they follow.
///
/// Every program of the story is this very `herald` binary: the daemon, the chat server and both chat clients run
/// as its hidden roles (``Program/Role``), and the hook's posts as `herald post`. So the demo needs no other product
/// built, yet each part is still a real process of its own, as in a session.
final class DemoRun: Sendable {
    let directory: String
    /// This `herald` executable.
    let herald: String
    private let children = DemoChildren()

    /// How long to pause after each step, so a person can follow the story; 0 by default.
    let pace: Duration

    /// Finds this executable and makes the temporary directory.
    init(pace: Duration = .zero) throws(DemoFailure) {
        self.pace = pace
        herald = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
        var template = Array("/tmp/herald-demo-XXXXXX".utf8CString)
        guard template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) != nil else {
            throw DemoFailure("cannot create a temporary directory in /tmp: errno \(errno)")
        }
        directory = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private func start(_ name: String, _ program: Program, _ arguments: [String]) throws(DemoFailure) -> DemoChild {
        do {
            let process = try ChildProcess(program.executable, program.leadingArguments + arguments)
            let child = DemoChild(name: name, process: process)
            children.add(child)
            return child
        } catch {
            throw DemoFailure("cannot start \(name): \(error)")
        }
    }

    /// Waits `pace` between steps.
    private func pause() async throws(DemoFailure) {
        guard pace > .zero else { return }
        do {
            try await Task.sleep(for: pace)
        } catch {
            throw DemoFailure.interrupted
        }
    }

    private func say(_ text: String) {
        Terminal.writeStdout("demo: \(text)\n")
    }

    /// Plays the story and returns bob's transcript.
    ///
    /// - Throws: ``DemoFailure``; one whose `interrupted` is set when the task was cancelled.
    func play() async throws(DemoFailure) -> [String] {
        let socket = directory + "/herald.sock"
        let daemon: LaunchedDaemon
        do {
            daemon = try await LaunchedDaemon.start(
                Program(role: .heraldd, of: herald),
                socketPath: socket,
                // The story's own daemon: no plugin installed on this machine takes part.
                arguments: ["--log-level", "notice", "--no-plugins"]
            )
        } catch {
            throw DemoFailure(error, doing: "starting heraldd")
        }
        children.add(DemoChild(name: "heraldd", process: daemon.process))
        say("heraldd is ready on \(socket)")
        try await pause()

        let server = try start("herald-chat-server", Program(role: .chatServer, of: herald), ["--port", "0"])
        let ready = try await server.waitForLine(containing: "listening on http://", on: .stderr)
        guard let range = ready.range(of: "http://[^ ]+", options: .regularExpression) else {
            throw DemoFailure("cannot read the chat server's address from: \(ready)")
        }
        let url = String(ready[range])
        say("the chat server is listening on \(url)")
        try await pause()

        let chat = Program(role: .chatClient, of: herald)
        let bob = try start("bob's herald-chat", chat, ["--user", "bob", "--server", url, "--no-presence"])
        try await bob.waitForLine(containing: "* bob connected")
        let alice = try start("alice's herald-chat", chat, ["--user", "alice", "--server", url, "--socket", socket])
        try await alice.waitForLine(containing: "presence is on")
        try await bob.waitForLine(containing: "* alice connected")
        say("alice and bob are in the room; alice's client follows her session through heraldd")
        try await pause()

        alice.type("hi bob, I'm here until lunch")
        try await bob.waitForLine(containing: "alice: hi bob")
        bob.type("hi alice")
        try await alice.waitForLine(containing: "bob: hi alice")

        say("alice locks her screen: herald post session.willResignActive user=alice reason=lock")

        try await pause()
        try await post(socket, ["session.willResignActive", "user=alice", "reason=lock"])
        try await post(socket, ["session.state", "--retain", "--json", state("away")])
        try await bob.waitForLine(containing: "* alice went away")

        bob.type("see you later, alice")
        try await bob.waitForLine(containing: "bob: see you later")

        say("alice unlocks it: herald post session.didBecomeActive user=alice reason=unlock")

        try await pause()
        try await post(socket, ["session.didBecomeActive", "user=alice", "reason=unlock"])
        try await post(socket, ["session.state", "--retain", "--json", state("active")])
        try await bob.waitForLine(containing: "* alice came back")

        alice.type("back!")
        try await bob.waitForLine(containing: "alice: back!")
        alice.type("/quit")
        guard try await alice.waitForExit(timeout: .seconds(10)) == 0 else {
            throw DemoFailure("alice's client did not exit 0 after /quit")
        }
        try await bob.waitForLine(containing: "* alice left")
        bob.type("/quit")
        guard try await bob.waitForExit(timeout: .seconds(10)) == 0 else {
            throw DemoFailure("bob's client did not exit 0 after /quit")
        }
        return bob.process.stdoutLines.filter { !$0.hasPrefix("-- ") }
    }

    private func state(_ value: String) -> String {
        let since = ISO8601DateFormatter().string(from: Date())
        return "{\"state\":\"\(value)\",\"since\":\"\(since)\"}"
    }

    /// Runs this herald's `post` as a separate process, as a desktop hook would.
    private func post(_ socket: String, _ arguments: [String]) async throws(DemoFailure) {
        let process = try start("herald post", Program(executable: herald), ["post", "--socket", socket] + arguments)
        guard try await process.waitForExit(timeout: .seconds(10)) == 0 else {
            throw DemoFailure(
                "herald post \(arguments.joined(separator: " ")) failed: \(process.process.stderrLines)"
            )
        }
    }

    /// Stops every child (SIGTERM, then SIGKILL after a grace period), newest first, and removes the temporary
    /// directory.
    func cleanUp() async {
        for child in children.all.reversed() {
            await child.process.stop()
        }
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// A child of the demo, with its part in the story for messages.
struct DemoChild: Sendable {
    var name: String
    var process: ChildProcess

    /// Which stream a line is awaited on.
    enum Stream {
        case stdout
        case stderr
    }

    /// Types a line into the child's standard input.
    func type(_ line: String) {
        process.writeStdin(line + "\n")
    }

    /// Waits for a line containing `text`.
    ///
    /// - Returns: the line.
    /// - Throws: ``DemoFailure`` if the child exits, `timeout` passes, or the demo is interrupted first.
    @discardableResult
    func waitForLine(
        containing text: String,
        on stream: Stream = .stdout,
        timeout: Duration = .seconds(30)
    ) async throws(DemoFailure) -> String {
        do {
            switch stream {
            case .stdout: return try await process.waitForStdoutLine(containing: text, timeout: timeout)
            case .stderr: return try await process.waitForStderrLine(containing: text, timeout: timeout)
            }
        } catch {
            throw DemoFailure(error, doing: "waiting for \(name) to say '\(text)'")
        }
    }

    /// Waits for the child to exit.
    ///
    /// - Returns: its status.
    /// - Throws: ``DemoFailure`` if it still runs after `timeout`, or the demo is interrupted.
    func waitForExit(timeout: Duration) async throws(DemoFailure) -> Int32 {
        do {
            return try await process.waitForExit(timeout: timeout)
        } catch {
            throw DemoFailure(error, doing: "waiting for \(name) to exit")
        }
    }
}

/// The children started so far.
private final class DemoChildren: Sendable {
    private let list = Mutex<[DemoChild]>([])

    func add(_ child: DemoChild) {
        list.withLock { $0.append(child) }
    }

    var all: [DemoChild] {
        list.withLock { $0 }
    }
}

/// Why the demo failed, for `Error:`.
struct DemoFailure: Error {
    var message: String
    var interrupted = false

    init(_ message: String, interrupted: Bool = false) {
        self.message = message
        self.interrupted = interrupted
    }

    /// A failure of `doing`, or an interruption when `error` is a cancellation.
    init(_ error: any Error, doing: String) {
        if error is CancellationError {
            self = .interrupted
        } else {
            self.init("\(doing): \(error)")
        }
    }

    /// The demo was interrupted by a signal.
    static let interrupted = DemoFailure("interrupted", interrupted: true)
}
