import Foundation
import Herald
import HeraldLaunch
import HeraldPosix
import HeraldTestSupport
import HeraldWire
import Testing

/// Issue 3, point 1: slow and stopped subscribers, with real processes.
struct ReliabilitySlowSubscriberTests {
    /// A subscriber stopped with SIGSTOP while 1,000,000 notifications are posted: the daemon stays within its queue
    /// bound, the publisher is never blocked, a healthy subscriber gets all of them in order, and the stopped one,
    /// continued, learns exactly how many it missed, then gets the live stream.
    @Test func aStoppedSubscriberCostsItsQueueBoundAndLearnsExactlyWhatItMissed() async throws {
        let queueBytes = 1 << 20
        let daemon = try await TestDaemon.start(arguments: ["--queue-bytes", "\(queueBytes)", "--log-level", "info"])
        let stopped = try ChildProcess(
            TestBinaries.path("herald"),
            ["observe", "flood", "--json", "--ready"],
            environment: daemon.environment
        )
        try await stopped.waitForStderrLine(containing: "ready")
        stopped.signal(SIGSTOP)

        // The healthy subscriber: the library, in this process, checking every sequence number.
        let healthy = try await Herald.connect(socketPath: daemon.socketPath)
        let notifications = try await healthy.notifications(matching: "flood", bufferingPolicy: .unbounded)
        let total = 1_000_000
        let progress = Progress()
        let consumer = Task { () -> (count: Int, inOrder: Bool, notices: Int) in
            var count = 0
            var last: UInt64 = 0
            var inOrder = true
            var notices = 0
            for await notification in notifications {
                if notification.notice != nil {
                    notices += 1
                    continue
                }
                if notification.sequence != last + 1 && last != 0 { inOrder = false }
                last = notification.sequence
                count += 1
                if count % 1000 == 0 { await progress.advance(to: count) }
                if count == total { break }
            }
            return (count, inOrder, notices)
        }

        let baseline = try DaemonProbe.residentBytes(of: daemon.pid)
        let publisher = try WireClient.ready(socketPath: daemon.socketPath)
        // Publish in slices, sampling the daemon's memory between them. A healthy subscriber is one that keeps up,
        // so each slice waits until it has read the last one; the stopped subscriber's queue takes all of them.
        var peak = baseline
        let slice = 10_000
        for published in stride(from: slice, through: total, by: slice) {
            try await blocking { try publisher.blast(slice, to: "flood") }
            peak = max(peak, try DaemonProbe.residentBytes(of: daemon.pid))
            guard await progress.reach(published, within: .seconds(30)) else {
                consumer.cancel()
                Issue.record("the healthy subscriber stalled before \(published) notifications")
                return
            }
        }
        let received = await consumer.value
        #expect(received.count == total)
        #expect(received.inOrder, "the healthy subscriber saw sequence numbers out of order")
        #expect(received.notices == 0, "the healthy subscriber was told of drops")
        // The stopped subscriber's queue plus a small constant (the allocator's slack and the healthy queues).
        #expect(peak - baseline < queueBytes + (8 << 20), "daemon grew by \(peak - baseline) bytes")

        stopped.signal(SIGCONT)
        try await stopped.waitForStdoutLine(containing: #""notice":"dropped""#, timeout: .seconds(60))
        // It has caught up once the last post is printed or counted by a notice.
        try await stopped.wait(for: "the last flood post, printed or counted", timeout: .seconds(120)) { out, _ in
            out.contains { $0.contains(#""seq":\#(total),"#) || $0.contains(#""lastSequence":\#(total)}"#) }
        }
        // Then the live stream: a post made now arrives, after every notice.
        let sequence = try await blocking { try publisher.post("flood", "live") }
        // Generous: on two cores shared with the other suites the continued process may print slowly.
        try await stopped.waitForStdoutLine(containing: #""seq":\#(sequence)"#, timeout: .seconds(120))
        // Every one of the million is either printed or counted by a notice: the daemon's (its queue was full) and,
        // when the continued process's printer fell behind its own reader, the library's. Nothing goes unreported.
        let lines = stopped.stdoutLines
        let printed = lines.filter { $0.hasPrefix(#"{"name":"flood""#) && !$0.contains(#""seq":\#(sequence)"#) }.count
        let missed = lines.filter { $0.contains(#""notice":"dropped""#) }
            .compactMap { Self.integer(after: #""count":"#, in: $0) }
            .reduce(0, +)
        #expect(missed > 0)
        #expect(missed + printed == total, "missed \(missed) + printed \(printed) should be \(total)")
        #expect(lines.last?.contains(#""seq":\#(sequence)"#) == true)
        stopped.signal(SIGTERM)
        _ = try await stopped.waitForExit()
        await healthy.close()
    }

    @Test func coalesceKeepsTheNewestValueOfEachName() async throws {
        let daemon = try await TestDaemon.start(arguments: ["--queue-bytes", "65536"])
        let stopped = try ChildProcess(
            TestBinaries.path("herald"),
            ["observe", "presence.*", "--json", "--ready", "--overflow", "coalesce"],
            environment: daemon.environment
        )
        try await stopped.waitForStderrLine(containing: "ready")
        stopped.signal(SIGSTOP)
        let publisher = try WireClient.ready(socketPath: daemon.socketPath)
        let last = try await blocking { () -> [String: UInt64] in
            var last: [String: UInt64] = [:]
            for round in 0..<20_000 {
                let name = "presence.user\(round % 5)"
                try publisher.send(.post(.init(name: name, payload: Array(#"{"round":\#(round)}"#.utf8))))
                last[name] = 0
            }
            for name in last.keys.sorted() {
                last[name] = try publisher.post(name, #"{"final":true}"#)
            }
            return last
        }
        stopped.signal(SIGCONT)
        for (name, sequence) in last {
            try await stopped.waitForStdoutLine(
                containing: #""name":"\#(name)","payload":{"final":true},"seq":\#(sequence)"#
            )
        }
        #expect(stopped.stdoutLines.contains { $0.contains(#""notice":"dropped""#) })
        stopped.signal(SIGTERM)
        _ = try await stopped.waitForExit()
    }

    @Test func disconnectEndsTheSlowSubscriberWithAReason() async throws {
        let daemon = try await TestDaemon.start(arguments: ["--queue-bytes", "65536"])
        let stopped = try ChildProcess(
            TestBinaries.path("herald"),
            ["observe", "flood", "--ready", "--overflow", "disconnect"],
            environment: daemon.environment
        )
        try await stopped.waitForStderrLine(containing: "ready")
        stopped.signal(SIGSTOP)
        let publisher = try WireClient.ready(socketPath: daemon.socketPath)
        try await blocking { try publisher.blast(50_000, to: "flood", payloadSize: 100) }
        stopped.signal(SIGCONT)
        #expect(try await stopped.waitForExit() == 69)
        #expect(stopped.stderr.contains("SLOW_CONSUMER"), "stderr: \(stopped.stderr)")
    }

    private static func integer(after key: String, in line: String) -> Int? {
        guard let range = line.range(of: key) else { return nil }
        return Int(line[range.upperBound...].prefix { $0.isNumber })
    }
}

/// How far a consuming task has got, for the test to wait on with a deadline.
actor Progress {
    private var count = 0
    private var waiters: [(target: Int, continuation: CheckedContinuation<Void, Never>)] = []

    func advance(to count: Int) {
        self.count = count
        let ready = waiters.filter { $0.target <= count }
        waiters.removeAll { $0.target <= count }
        for waiter in ready { waiter.continuation.resume() }
    }

    /// Whether the count reaches `target` within `timeout`.
    nonisolated func reach(_ target: Int, within timeout: Duration) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                await self.wait(for: target)
                return true
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return false
            }
            let first = await group.next()!
            group.cancelAll()
            if !first { await self.releaseAll() }
            return first
        }
    }

    private func wait(for target: Int) async {
        if count >= target { return }
        await withCheckedContinuation { waiters.append((target, $0)) }
    }

    private func releaseAll() {
        for waiter in waiters { waiter.continuation.resume() }
        waiters.removeAll()
    }
}
