import Foundation
import HeraldTestSupport
import Testing

/// Nothing wakes while nothing happens: an idle herald-mqtt-bridge, connected to a real mosquitto and to heraldd,
/// makes no context switch in any of its threads (the main thread, Herald's reader, the MQTT I/O thread). Its
/// deadlines (the keep-alive, the state's next post) are armed only while something is pending; before, a
/// once-a-second tick woke it forever.
///
/// Every thread is counted, libdispatch's included: the bridge starts on a thread of its own (`runOnOwnThread`), so
/// the global executor's worker pool, whose monitor would wake the process once a second for good, never starts.
@Suite struct MQTTBridgeIdleTests {
    /// The threads the bridge's own code runs on: the main thread (named after the executable) and the threads it
    /// names.
    static let ownThreads: Set<String> = ["herald-mqtt-bri", "herald-reader", "mqtt-io"]

    /// The context switches so far of each thread of `pid`, by thread id, with its name, from
    /// /proc/PID/task/*/status.
    static func contextSwitches(of pid: Int32) throws -> [String: (name: String, switches: Int)] {
        let tasks = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")
        var threads: [String: (name: String, switches: Int)] = [:]
        for task in tasks {
            // A thread that ended since the listing has no status to read, and no more switches to count.
            guard let status = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/status", encoding: .utf8) else {
                continue
            }
            var name = ""
            var switches = 0
            for line in status.split(separator: "\n") {
                if line.hasPrefix("Name:") { name = line.dropFirst(5).trimmingCharacters(in: .whitespaces) }
                guard line.hasPrefix("voluntary_ctxt_switches:") || line.hasPrefix("nonvoluntary_ctxt_switches:")
                else { continue }
                switches += Int(line.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) ?? 0
            }
            threads[task] = (name, switches)
        }
        return threads
    }

    /// With a Keep Alive longer than the window (the only deadline an idle connection has is its PINGREQ, at half
    /// the Keep Alive), a window of 5 s passes with no wake-up of the bridge's threads, after it has bridged a post
    /// each way.
    @Test(.requires("mosquitto"), .hangGuard)
    func anIdleBridgeDoesNotWakeAtAll() async throws {
        let broker = try await TestBroker()
        let a = try await BridgedHost(
            hostID: "hostIA",
            broker: broker.url,
            exports: ["idle.**"],
            imports: ["idle.**"],
            extra: ["--keep-alive", "600"]
        )
        let b = try await BridgedHost(
            hostID: "hostIB",
            broker: broker.url,
            exports: ["idle.**"],
            imports: ["idle.**"],
            extra: ["--keep-alive", "600"]
        )
        do {
            try await checkQuiet(a, b)
        } catch {
            Issue.record(error)
        }
        await a.stop()
        await b.stop()
        await broker.process.stop()
    }

    private func checkQuiet(_ a: BridgedHost, _ b: BridgedHost) async throws {
        try await a.waitUntilBridging(exports: 1)
        try await b.waitUntilBridging(exports: 1)
        // Work first: a post each way, so the quiet that follows comes after the bridges were busy.
        let onA = try await a.connect()
        let onB = try await b.connect()
        let fromA = Received(try await onB.notifications(matching: "idle.**"))
        let fromB = Received(try await onA.notifications(matching: "idle.**"))
        try await onA.post("idle.a", userInfo: ["n": 1])
        try await onB.post("idle.b", userInfo: ["n": 2])
        let bridged = try await eventually(timeout: .seconds(20)) {
            !fromA.named("idle.a").isEmpty && !fromB.named("idle.b").isEmpty
        }
        #expect(bridged, "A: \(a.bridge.stderr)\nB: \(b.bridge.stderr)")

        // The state's deadline fires once, a second after the last event; from then on nothing is pending. Windows
        // of 5 s until one passes without a wake-up, for up to 30 s: a bridge that wakes now and then never has one.
        let pid = a.bridge.pid
        var windows: [String] = []
        let quiet = try await eventually(timeout: .seconds(30)) {
            let before = try Self.contextSwitches(of: pid)
            try await Task.sleep(for: .seconds(5))
            let after = try Self.contextSwitches(of: pid)
            var woken: [String] = []
            var own = 0
            var named = Set<String>()
            for (id, thread) in after.sorted(by: { $0.key < $1.key }) {
                let count = thread.switches - (before[id]?.switches ?? 0)
                if Self.ownThreads.contains(thread.name) {
                    own += count
                    named.insert(thread.name)
                }
                if count > 0 { woken.append("\(thread.name) \(count)") }
            }
            windows.append(woken.joined(separator: ", "))
            // All three threads found, and no thread at all woke.
            return own == 0 && named == Self.ownThreads && woken.isEmpty
        }
        #expect(quiet, "bridge A's threads woke in successive windows of 5 s: \(windows); \(a.bridge.stderr)")

        // And it still bridges after the quiet.
        try await onA.post("idle.again", userInfo: ["n": 3])
        let again = try await eventually(timeout: .seconds(20)) { !fromA.named("idle.again").isEmpty }
        #expect(again, "A: \(a.bridge.stderr)")
        await onA.close()
        await onB.close()
    }
}
