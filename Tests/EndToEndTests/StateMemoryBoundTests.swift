import Foundation
import HeraldTestSupport
import HeraldWire
import Testing

/// Issue 31's memory bound: the state log holds at most twice the state it describes (each retained value's record:
/// its name, its payload and 42 bytes, after the log's 12-byte header), or 64 KiB when that is more, while values are
/// posted, overwritten and cleared.
struct StateMemoryBoundTests {
    /// What a retained value's record takes besides its name and payload, and the log's header.
    static let recordOverhead = 42
    static let header = 12
    static let floor = 64 << 10

    static func size(of path: String) -> Int {
        (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
    }

    @Test func theLogStaysWithinTwiceTheRetainedStateAsValuesAreOverwrittenAndCleared() async throws {
        let directory = TemporaryDirectory()
        let path = directory.file("state.log")
        let daemon = try await TestDaemon.start(arguments: ["--state-file", path], directory: directory)
        let writer = try WireClient.ready(socketPath: daemon.socketPath)
        var live: [String: Int] = [:]
        func liveBytes() -> Int {
            Self.header + live.reduce(0) { $0 + Self.recordOverhead + $1.key.utf8.count + $1.value }
        }
        var random: UInt64 = 0x2545_F491_4F6C_DD1D
        func next(_ bound: Int) -> Int {
            random = random &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((random >> 33) % UInt64(bound))
        }
        var largestRatio = 0.0
        var failures: [String] = []
        for step in 0..<3000 {
            let name = "mem.\(next(150))"
            // Mostly overwrites of 1 to 2,000 bytes; one post in 25 clears its name.
            let count = step % 25 == 24 ? 0 : 1 + next(2000)
            try writer.post(name, String(repeating: "v", count: count), retain: true)
            live[name] = count == 0 ? nil : count
            // The ACK comes after the turn's record is written: the log is as the daemon left it after this post.
            let size = Self.size(of: path)
            let bound = max(2 * liveBytes(), Self.floor)
            largestRatio = max(largestRatio, Double(size) / Double(max(liveBytes(), Self.floor / 2)))
            if size > bound && failures.count < 5 {
                failures.append("after post \(step): the log holds \(size) bytes, its state \(liveBytes())")
            }
        }
        #expect(failures.isEmpty, "\(failures)")
        let compactions = daemon.process.stderr.components(separatedBy: "state: compacted").count - 1
        #expect(compactions >= 10, "only \(compactions) compactions: the test did not exercise the bound")
        #expect(largestRatio > 1.4, "the log never came near its bound (\(largestRatio)x): the test is too gentle")

        // Clearing nearly everything shrinks the state at once; the next compaction brings the log within the new,
        // smaller bound (here the 64 KiB floor).
        for name in live.keys.sorted().dropFirst(5) {
            try writer.post(name, "", retain: true)
            live[name] = nil
        }
        try writer.post("mem.after", "x", retain: true)
        live["mem.after"] = 1
        let within = try await eventually(timeout: .seconds(10)) {
            Self.size(of: path) <= max(2 * liveBytes(), Self.floor)
        }
        #expect(within, "the log holds \(Self.size(of: path)) bytes for a state of \(liveBytes())")

        // And what it holds is the state: a new heraldd on it has the same values.
        try await daemon.stop(signal: SIGKILL)
        let again = try await TestDaemon.start(arguments: ["--state-file", path], directory: directory)
        let reader = try WireClient.ready(socketPath: again.socketPath)
        let replayed = try reader.subscribe(1, "mem.*")
        var restored: [String: Int] = [:]
        for case .notify(let notify) in replayed { restored[notify.name] = notify.payload.count }
        #expect(restored == live)
    }
}
