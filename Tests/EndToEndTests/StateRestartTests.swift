import Foundation
import HeraldBroker
import HeraldLaunch
import HeraldPosix
import HeraldTestSupport
import HeraldWire
import Testing

/// Issue 31 end to end: retained values and wills across a SIGKILL or a restart of heraldd, on `--state-file` or
/// the default beside the socket, and logs that are damaged or not logs at all.
struct StateRestartTests {
    /// The frames `reader` receives within `seconds`, ending with a sentinel it posts itself: so "nothing more"
    /// is observed as the sentinel coming next, not as a silence timed out.
    static func frames(until sentinel: String, on reader: WireClient, after seconds: Double) throws -> [Frame] {
        // Waits out a will that must not come: an absence has no event to wait for.
        Thread.sleep(forTimeInterval: seconds)
        return try framesUpTo(sentinel, on: reader)
    }

    /// Reads until a notification named `name` has come, unless it is among `replayed` already (each read bounded by
    /// the client's 10 s receive timeout), then posts `sentinel` and reads up to it: every frame before the
    /// sentinel, so a second `name` shows too.
    static func frames(
        afterSeeing name: String,
        sentinel: String,
        on reader: WireClient,
        _ replayed: [Frame] = []
    ) throws -> [Frame] {
        var frames = replayed
        while !frames.contains(where: { if case .notify(let notify) = $0 { notify.name == name } else { false } }) {
            guard let frame = try reader.receive() else { throw TestFailure("the daemon closed the connection") }
            frames.append(frame)
        }
        return try frames + framesUpTo(sentinel, on: reader)
    }

    private static func framesUpTo(_ sentinel: String, on reader: WireClient) throws -> [Frame] {
        try reader.send(.post(.init(request: 0, name: sentinel, payload: Array("end".utf8), retain: false)))
        var frames: [Frame] = []
        while let frame = try reader.receive() {
            if case .notify(let notify) = frame, notify.name == sentinel { return frames }
            frames.append(frame)
        }
        throw TestFailure("the daemon closed the connection")
    }

    /// How many notifications named `name` are among `frames`; with `live`, only those posted live (not replayed).
    static func presenceNotifications(_ frames: [Frame], named name: String, live: Bool = false) -> Int {
        frames.count {
            if case .notify(let notify) = $0 { return notify.name == name && !(live && notify.retained) }
            return false
        }
    }

    @Test(arguments: [false, true])
    func aRetainedValueSurvivesSIGKILL(explicitStateFile: Bool) async throws {
        let directory = TemporaryDirectory()
        let arguments = explicitStateFile ? ["--state-file", directory.file("state.log")] : []
        let first = try await TestDaemon.start(arguments: arguments, directory: directory)
        let writer = try WireClient.ready(socketPath: first.socketPath)
        try writer.post("build.state", "green", retain: true)
        try writer.post("build.other", "x", retain: true)
        try writer.post("build.other", "", retain: true)
        try await first.stop(signal: SIGKILL)
        #expect(
            FileManager.default.fileExists(
                atPath: explicitStateFile ? directory.file("state.log") : first.socketPath + ".state"
            )
        )
        let second = try await TestDaemon.start(arguments: arguments, directory: directory)
        let got = try await run("herald", ["get", "build.state"], environment: second.environment)
        #expect(got.stdout == "green\n")
        let cleared = try await run("herald", ["get", "build.other"], environment: second.environment)
        #expect(cleared.status != 0)
        #expect(second.process.stderr.contains("restored 1 retained values"))
        // The zeros reserved past the log's end are its end, not damage.
        #expect(!second.process.stderr.contains("damaged"), "\(second.process.stderr)")
    }

    @Test func aWillIsPostedOnceWhenItsClientDiesWhileHeralddIsDown() async throws {
        let directory = TemporaryDirectory()
        let arguments = ["--state-file", directory.file("state.log")]
        let first = try await TestDaemon.start(arguments: arguments, directory: directory)
        let client = try ChildProcess(
            TestBinaries.path("herald"),
            // Retained, so the reader below sees it however late it subscribes: a whole parallel run on two cores
            // can take longer to start a daemon and connect than the delay.
            ["observe", "chat.room", "--ready", "--will", "presence.crash", "--will-delay", "2", "--will-retain"],
            environment: first.environment
        )
        try await client.waitForStderrLine(containing: "ready")
        try await first.stop(signal: SIGKILL)
        client.signal(SIGKILL)
        _ = try await client.waitForExit()
        let second = try await TestDaemon.start(arguments: arguments, directory: directory)
        let reader = try WireClient.ready(socketPath: second.socketPath)
        // A will posted before this subscription comes as its replay, among the frames before the ACK.
        let replayed = try reader.subscribe(1, "presence.*")
        let frames: [Frame]
        do {
            frames = try await blocking {
                try Self.frames(afterSeeing: "presence.crash", sentinel: "presence.sentinel", on: reader, replayed)
            }
        } catch {
            Issue.record("no will: \(error); the restarted heraldd said:\n\(second.process.stderr)")
            return
        }
        #expect(Self.presenceNotifications(frames, named: "presence.crash") == 1)
        // And once only: a third daemon on the same log has no will left.
        try await second.stop()
        let third = try await TestDaemon.start(arguments: arguments, directory: directory)
        let again = try WireClient.ready(socketPath: third.socketPath)
        try again.subscribe(1, "presence.*")
        let later = try await blocking { try Self.frames(until: "presence.sentinel", on: again, after: 3) }
        // The value it left is replayed (RETAINED); a will posted again would come live.
        #expect(Self.presenceNotifications(later, named: "presence.crash", live: true) == 0)
    }

    @Test func aWillIsNotPostedWhenItsClientReconnectsAfterARestart() async throws {
        let directory = TemporaryDirectory()
        let first = try await TestDaemon.start(directory: directory)
        let client = try ChildProcess(
            TestBinaries.path("herald"),
            ["observe", "chat.room", "--ready", "--reconnect", "--will", "presence.back", "--will-delay", "2"],
            environment: first.environment
        )
        try await client.waitForStderrLine(containing: "ready")
        try await first.stop()
        let second = try await TestDaemon.start(directory: directory)
        try await client.waitForStdoutLine(containing: "reconnected")
        let reader = try WireClient.ready(socketPath: second.socketPath)
        try reader.subscribe(1, "presence.*")
        let frames = try await blocking { try Self.frames(until: "presence.sentinel", on: reader, after: 3) }
        #expect(Self.presenceNotifications(frames, named: "presence.back") == 0)
        // Its will is the one registered again, and is posted once when the client dies.
        client.signal(SIGKILL)
        let after = try await blocking {
            try Self.frames(afterSeeing: "presence.back", sentinel: "presence.sentinel", on: reader)
        }
        #expect(Self.presenceNotifications(after, named: "presence.back") == 1)
    }

    /// A log cut inside its last record, or followed by zeros or garbage, starts with every whole record before.
    @Test(arguments: ["cut", "zeros", "flipped"])
    func aDamagedLogIsRecoveredUpToItsLastGoodRecord(damage: String) async throws {
        let directory = TemporaryDirectory()
        let path = directory.file("state.log")
        let first = try await TestDaemon.start(arguments: ["--state-file", path], directory: directory)
        let writer = try WireClient.ready(socketPath: first.socketPath)
        try writer.post("keep.a", "1", retain: true)
        try writer.post("keep.b", "2", retain: true)
        try writer.post("lose.c", "3", retain: true)
        try await first.stop(signal: SIGKILL)
        var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        // heraldd writes through a mapping: the log ends at its end marker, and the file goes on with the zeros
        // reserved for later appends. The damage is done at the log's end.
        let marker = Data(StateLog.end)
        let end = try #require(bytes.range(of: marker)?.lowerBound, "no end marker in the log")
        #expect(bytes[(end + marker.count)...].allSatisfy { $0 == 0 })
        switch damage {
        case "cut": bytes = bytes[..<(end - 3)]
        case "zeros": bytes.replaceSubrange(end..<(end + marker.count), with: Data(count: marker.count))
        default: bytes[end - 2] ^= 0x01
        }
        try bytes.write(to: URL(fileURLWithPath: path))
        let second = try await TestDaemon.start(arguments: ["--state-file", path], directory: directory)
        let environment = second.environment
        #expect(try await run("herald", ["get", "keep.a"], environment: environment).stdout == "1\n")
        #expect(try await run("herald", ["get", "keep.b"], environment: environment).stdout == "2\n")
        let third = try await run("herald", ["get", "lose.c"], environment: environment)
        #expect(third.stdout == (damage == "zeros" ? "3\n" : ""))
        #expect(second.process.stderr.contains("recovered the"))
    }

    @Test func aFileThatIsNotALogIsRenamedAsideAndHeralddStartsEmpty() async throws {
        let directory = TemporaryDirectory()
        let path = directory.file("state.log")
        try Data("this is not a state log\n".utf8).write(to: URL(fileURLWithPath: path))
        let daemon = try await TestDaemon.start(arguments: ["--state-file", path], directory: directory)
        #expect(daemon.process.stderr.contains("renamed it to \(path).unusable"))
        #expect(FileManager.default.fileExists(atPath: path + ".unusable"))
        let writer = try WireClient.ready(socketPath: daemon.socketPath)
        try writer.post("fresh.value", "1", retain: true)
        try await daemon.stop(signal: SIGKILL)
        let again = try await TestDaemon.start(arguments: ["--state-file", path], directory: directory)
        #expect(try await run("herald", ["get", "fresh.value"], environment: again.environment).stdout == "1\n")
    }
}

extension StateRestartTests {
    /// A log grown past its bound (twice its state, or 64 KiB) is compacted within the loop, and the value is there after
    /// a SIGKILL.
    @Test func aGrownLogIsCompactedAndKeepsTheNewestValue() async throws {
        let directory = TemporaryDirectory()
        let path = directory.file("state.log")
        let first = try await TestDaemon.start(arguments: ["--state-file", path], directory: directory)
        let writer = try WireClient.ready(socketPath: first.socketPath)
        let filler = String(repeating: "x", count: 8000)
        for index in 0..<300 { try writer.post("grow.value", "\(index) \(filler)", retain: true) }
        try writer.post("grow.value", "last", retain: true)
        _ = try await first.process.waitForStderrLine(containing: "state: compacted")
        let size = try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int ?? 0
        #expect(size < 1 << 20, "the compacted log holds \(size) bytes")
        try await first.stop(signal: SIGKILL)
        let second = try await TestDaemon.start(arguments: ["--state-file", path], directory: directory)
        #expect(try await run("herald", ["get", "grow.value"], environment: second.environment).stdout == "last\n")
    }
}

extension StateRestartTests {
    /// A relayed retained value's origin (wire version 2) is in the log: after a SIGKILL, a new subscriber's replay
    /// carries the same host, daemon and sequence, marked retained; a version 1 reader gets the value without it.
    @Test func aRetainedValueKeepsItsOriginAcrossSIGKILL() async throws {
        let directory = TemporaryDirectory()
        let first = try await TestDaemon.start(directory: directory)
        let writer = try WireClient.ready(socketPath: first.socketPath, version: 2)
        let origin = Frame.Origin(host: "laptop.local", daemon: "heraldd-1000", sequence: 123_456_789)
        try writer.post("bridge.mqtt.temp", "21.5", retain: true, origin: origin)
        try writer.post("build.state", "green", retain: true)
        try await first.stop(signal: SIGKILL)
        let second = try await TestDaemon.start(directory: directory)
        let reader = try WireClient.ready(socketPath: second.socketPath, version: 2)
        let replayed = try reader.subscribe(1, "**").compactMap { frame -> Frame.Notify? in
            if case .notify(let notify) = frame { return notify }
            return nil
        }
        let relayed = replayed.first { $0.name == "bridge.mqtt.temp" }
        #expect(relayed?.payload == Array("21.5".utf8))
        #expect(relayed?.retained == true)
        #expect(relayed?.origin == origin)
        let plain = replayed.first { $0.name == "build.state" }
        #expect(plain?.retained == true)
        #expect(plain?.origin == nil)
        let old = try WireClient.ready(socketPath: second.socketPath, version: 1)
        let oldReplay = try old.subscribe(1, "bridge.**")
        guard case .notify(let notify) = oldReplay.first else {
            Issue.record("no replay for version 1: \(oldReplay)")
            return
        }
        #expect(notify.payload == Array("21.5".utf8) && notify.origin == nil && notify.retained)
    }
}
