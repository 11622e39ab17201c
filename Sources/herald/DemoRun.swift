import Foundation
import HeraldArguments
import Synchronization

/// One run of `herald demo`: the temporary directory, the children, and the script they follow.
final class DemoRun: Sendable {
    let directory: String
    let binaries: String
    private let children = DemoChildren()

    /// Finds the sibling executables and makes the temporary directory.
    /// How long to pause after each step, so a person can follow the story; 0 by default.
    let pace: Duration

    init(pace: Duration = .zero) throws(DemoFailure) {
        self.pace = pace
        let exe = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        binaries = exe.deletingLastPathComponent().path
        for name in ["heraldd", "herald-chat-server", "herald-chat"]
        where !FileManager.default.isExecutableFile(atPath: binaries + "/" + name) {
            throw DemoFailure("\(name) is not next to herald in \(binaries); build everything first with 'swift build'")
        }
        var template = Array("/tmp/herald-demo-XXXXXX".utf8CString)
        guard template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) != nil else {
            throw DemoFailure("cannot create a temporary directory in /tmp: errno \(errno)")
        }
        directory = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private func start(_ name: String, _ executable: String, _ arguments: [String]) throws(DemoFailure) -> DemoProcess {
        do {
            let process = try DemoProcess(name: name, executable: binaries + "/" + executable, arguments: arguments)
            children.add(process)
            return process
        } catch {
            throw DemoFailure("cannot start \(executable): \(error)")
        }
    }

    /// Waits `pace` between steps, noticing Ctrl-C.
    private func pause() async throws(DemoFailure) {
        try DemoInterruption.check()
        guard pace > .zero else { return }
        try? await Task.sleep(for: pace)
        try DemoInterruption.check()
    }

    private func say(_ text: String) {
        Terminal.writeStdout("demo: \(text)\n")
    }

    /// Plays the story and returns bob's transcript.
    func play() async throws(DemoFailure) -> [String] {
        let socket = directory + "/herald.sock"
        let heraldd = try start("heraldd", "heraldd", ["--socket", socket, "--log-level", "notice"])
        try await heraldd.waitForLine(containing: "ready on", on: .stderr)
        say("heraldd is ready on \(socket)")
        try await pause()

        let server = try start("herald-chat-server", "herald-chat-server", ["--port", "0"])
        let ready = try await server.waitForLine(containing: "listening on http://", on: .stderr)
        guard let range = ready.range(of: "http://[^ ]+", options: .regularExpression) else {
            throw DemoFailure("cannot read the chat server's address from: \(ready)")
        }
        let url = String(ready[range])
        say("the chat server is listening on \(url)")
        try await pause()

        let bob = try start("bob's herald-chat", "herald-chat", ["--user", "bob", "--server", url, "--no-presence"])
        try await bob.waitForLine(containing: "* bob connected")
        let alice = try start(
            "alice's herald-chat",
            "herald-chat",
            ["--user", "alice", "--server", url, "--socket", socket]
        )
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
        guard await alice.waitForExit(timeout: .seconds(10)) == 0 else {
            throw DemoFailure("alice's client did not exit 0 after /quit")
        }
        try await bob.waitForLine(containing: "* alice left")
        bob.type("/quit")
        guard await bob.waitForExit(timeout: .seconds(10)) == 0 else {
            throw DemoFailure("bob's client did not exit 0 after /quit")
        }
        try DemoInterruption.check()
        return bob.stdoutLines.filter { !$0.hasPrefix("-- ") }
    }

    private func state(_ value: String) -> String {
        let since = ISO8601DateFormatter().string(from: Date())
        return "{\"state\":\"\(value)\",\"since\":\"\(since)\"}"
    }

    /// Runs this herald's `post` as a separate process, as a desktop hook would.
    private func post(_ socket: String, _ arguments: [String]) async throws(DemoFailure) {
        try DemoInterruption.check()
        let process = try start("herald post", "herald", ["post", "--socket", socket] + arguments)
        guard await process.waitForExit(timeout: .seconds(10)) == 0 else {
            throw DemoFailure("herald post \(arguments.joined(separator: " ")) failed: \(process.stderrLines)")
        }
    }

    /// Stops every child (SIGTERM, then SIGKILL after a grace period) and removes the temporary directory.
    func cleanUp() async {
        for child in children.all.reversed() {
            await child.stop()
        }
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// The children started so far.
private final class DemoChildren: Sendable {
    private let list = Mutex<[DemoProcess]>([])

    func add(_ process: DemoProcess) {
        list.withLock { $0.append(process) }
    }

    var all: [DemoProcess] {
        list.withLock { $0 }
    }
}
