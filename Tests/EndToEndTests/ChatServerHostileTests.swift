import Foundation
import HeraldPosix
import HeraldTestSupport
import Synchronization
import Testing

/// The attacks of issue 15 on the real herald-chat-server: connection slots, descriptors, slowloris, join cost.
///
/// Each test reproduces the attack with real sockets and asserts the bound the README's Guarantees table states.
@Suite struct ChatServerHostileTests {
    /// A raw connection that can sit in an array (``RawHTTP`` is non-copyable). `@unchecked Sendable` so a test can
    /// hand it to the one thread that reads it off the cooperative pool (`blocking`).
    final class Connection: @unchecked Sendable {
        var raw: RawHTTP

        init(port: UInt16, host: String = "127.0.0.1") throws {
            raw = try RawHTTP(port: port, host: host)
        }

        func send(_ text: String) throws {
            try raw.send(text)
        }

        @discardableResult
        func read(until condition: (String) -> Bool) throws -> String {
            try raw.read(until: condition)
        }
    }

    private func post(_ port: UInt16, _ text: String) -> String {
        "POST /chat/say HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: \(body(text).utf8.count)\r\n\r\n"
            + body(text)
    }

    private func body(_ text: String) -> String {
        #"{"id":"\#(UUID())","user":"legit","message":"\#(text)","date":1}"#
    }

    /// The counters herald-chat-server logs when it stops, by name: "accepted 12 connections, closed 3 to make
    /// room" gives ["accepted": 12, "closed": 3, ...].
    private func stoppedStatistics(_ server: ChatServerProcess) async throws -> [String: Int] {
        server.process.signal(SIGTERM)
        let line = try await server.process.waitForStderrLine(containing: "stopped:")
        let text = line.components(separatedBy: "stopped:").last ?? ""
        let words = text.components(separatedBy: CharacterSet(charactersIn: " ,;")).filter { !$0.isEmpty }
        var counts: [String: Int] = [:]
        for (index, word) in words.enumerated() {
            guard let number = Int(word) else { continue }
            // "accepted N", "closed N", "refused N", "accepting N times"; "N chunks", "N socket writes".
            if index > 0, ["accepted", "closed", "refused", "accepting"].contains(words[index - 1]) {
                counts[words[index - 1]] = number
            } else if index + 1 < words.count {
                counts[words[index + 1]] = number
            }
        }
        return counts
    }

    @Test func listenersPastTheirCapAreRefusedAndRequestsAreStillServed() async throws {
        // The issue's attack at 1,024 streams, scaled to a cap of 200 (the default cap is 1,024; the mechanism is
        // the same, and 1,024 streams cost the shared machine 150 MB of socket buffers).
        let cap = 200
        let server = try await ChatServerProcess.start(["--max-listeners", "\(cap)"])
        var streams: [Connection] = []
        for index in 0..<cap {
            let stream = try Connection(port: server.port)
            try stream.send("GET /chat/room?u\(index) HTTP/1.1\r\nHost: x\r\n\r\n")
            streams.append(stream)
        }
        try streams.last!.read { $0.contains("u\(cap - 1) connected") }
        // Past the cap: a prompt 503 with a reason, not a reset and not a hang.
        for index in 0..<5 {
            let extra = try Connection(port: server.port)
            try extra.send("GET /chat/room?extra\(index) HTTP/1.1\r\nHost: x\r\n\r\n")
            let answer = try extra.read { $0.contains("}") }
            #expect(answer.hasPrefix("HTTP/1.1 503 Service Unavailable\r\n"), "\(answer)")
            #expect(answer.contains("limit of \(cap) streams"))
        }
        // Requests have slots of their own: a POST is served, and every listener gets it.
        let poster = try Connection(port: server.port)
        try poster.send(post(server.port, "still served"))
        #expect(try poster.read { $0.contains("\r\n\r\nOK") }.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(try streams[0].read { $0.contains("still served") }.contains("still served"))
        // One listener leaves: its place can be taken.
        streams.removeFirst()
        let late = try await eventuallyJoined(port: server.port, name: "late")
        #expect(late.contains("late connected"))
        let counts = try await stoppedStatistics(server)
        #expect(counts["refused"] ?? 0 >= 5, "\(counts)")
        withExtendedLifetime(streams) {}
    }

    /// Joins `name`, retrying while the server still counts a stream that just closed: an attempt it refuses and
    /// closes (a 503, then a reset) means "not yet".
    private func eventuallyJoined(port: UInt16, name: String) async throws -> String {
        var text = ""
        _ = try await eventuallySucceeds(timeout: .seconds(10)) {
            let stream = try Connection(port: port)
            try stream.send("GET /chat/room?\(name) HTTP/1.1\r\nHost: x\r\n\r\n")
            text = try stream.read { $0.contains("\(name) connected") || $0.contains("}\"") || $0.contains("503") }
            return text.contains("\(name) connected")
        }
        return text
    }

    @Test func runningOutOfDescriptorsPausesAcceptingInsteadOfSpinning() async throws {
        // 64 descriptors, soft and hard, so the server cannot raise them; limits far above that, so that streams
        // take every descriptor (a server configured past its descriptor limit, or one sharing it).
        let server = try await ChatServerProcess.start(
            ["--max-listeners", "1000", "--max-requests", "1000"],
            launcher: ["/usr/bin/prlimit", "--nofile=64:64"]
        )
        var streams: [Connection] = []
        for index in 0..<100 {
            // Connecting succeeds through the listen backlog even when the server cannot accept.
            let stream = try Connection(port: server.port)
            try stream.send("GET /chat/room?u\(index) HTTP/1.1\r\nHost: x\r\n\r\n")
            streams.append(stream)
        }
        // A legitimate client waits in the backlog behind them; once the streams hold every descriptor it cannot be
        // accepted, and over its 2 s wait the server must stay nearly idle instead of retrying accept(2) at once.
        let waiting = try Connection(port: server.port)
        try waiting.raw.socket.setReceiveTimeout(seconds: 2)
        try waiting.send(post(server.port, "after the storm"))
        try await server.process.waitForStderrLine(containing: "pausing accepts")
        let cpuBefore = try DaemonProbe.cpuSeconds(of: server.process.pid)
        let start = ContinuousClock.now
        // Seconds of blocking reads, here and below: off the cooperative pool, whose two threads the rest of a
        // parallel run needs.
        let early = try await blocking { try waiting.read { $0.contains("\r\n\r\nOK") } }
        let elapsed = ContinuousClock.now - start
        let cpu = try DaemonProbe.cpuSeconds(of: server.process.pid) - cpuBefore
        let wall = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        #expect(early.isEmpty, "served while every descriptor was a stream: \(early)")
        #expect(cpu < max(0.1, wall * 0.25), "the server used \(cpu) s of CPU in \(wall) s while out of descriptors")
        // The streams go: descriptors free up, accepting resumes, and the waiting request is answered.
        streams.removeAll()
        try waiting.raw.socket.setReceiveTimeout(seconds: 15)
        let answer = try await blocking { try waiting.read { $0.contains("\r\n\r\nOK") } }
        #expect(answer.hasPrefix("HTTP/1.1 200 OK\r\n"), "\(answer)")
        let counts = try await stoppedStatistics(server)
        #expect(counts["accepting"] ?? 0 >= 2, "it paused, retried and paused again: \(counts)")
    }

    /// A slowloris: `count` connections that each send one byte of a request head and then nothing.
    private func slowloris(_ count: Int, port: UInt16) throws -> [Connection] {
        try (0..<count).map { _ in
            let connection = try Connection(port: port)
            try connection.send("G")
            return connection
        }
    }

    /// Sends a POST on a new connection and returns how long the answer took.
    private func timedPost(_ port: UInt16) throws -> (answer: String, seconds: Double) {
        let start = ContinuousClock.now
        let legit = try Connection(port: port)
        try legit.send(post(port, "served"))
        let answer = try legit.read { $0.contains("\r\n\r\nOK") }
        let elapsed = ContinuousClock.now - start
        return (answer, Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
    }

    @Test func twoThousandSlowHeadsDoNotDelayALegitimateRequest() async throws {
        // A request timeout past the test: in a loaded whole run, making the 2,000 heads took longer than the
        // default 10 s, and the server rightly closed the first ones before the last were open.
        let server = try await ChatServerProcess.start(["--request-timeout", "600"])
        let hostile = try slowloris(2_000, port: server.port)
        // All 2,000 are open in the server at once: the default limit for requests is 4,096 here.
        var descriptors = 0
        let allOpen = try await eventually(timeout: .seconds(60)) {
            descriptors = try DaemonProbe.descriptorCount(of: server.process.pid)
            return descriptors >= 2_000
        }
        #expect(allOpen, "the server holds \(descriptors) descriptors")
        let (answer, seconds) = try timedPost(server.port)
        #expect(answer.hasPrefix("HTTP/1.1 200 OK\r\n"), "\(answer)")
        // Broken, it took the 10 s request timeout; a generous bound for a loaded machine.
        #expect(seconds < 2, "took \(seconds) s")
        withExtendedLifetime(hostile) {}
    }

    @Test func aHeadUnfinishedPastTheRequestTimeoutIsAnswered408AndClosed() async throws {
        let server = try await ChatServerProcess.start(["--request-timeout", "0.5"])
        let clock = ContinuousClock()
        let started = clock.now
        let head = try Connection(port: server.port)
        try head.send("G")
        try head.raw.socket.setReceiveTimeout(seconds: 30)
        // The end is timed on the reading thread: the test's task can wait for the shared pool far longer.
        let (answer, ended) = try await blocking { (try head.raw.readToEnd(), ContinuousClock.now) }
        let took = ended - started
        #expect(answer.hasPrefix("HTTP/1.1 408 Request Timeout\r\n"), "\(answer)")
        #expect(took >= .milliseconds(500), "closed after \(took), before its timeout")
        #expect(took < .seconds(30), "not closed within 30 s")
    }

    @Test func pastTheRequestLimitTheSlowestHeadsAreClosedFirst() async throws {
        let server = try await ChatServerProcess.start(["--max-requests", "256"])
        let hostile = try slowloris(2_000, port: server.port)
        let (answer, seconds) = try timedPost(server.port)
        #expect(answer.hasPrefix("HTTP/1.1 200 OK\r\n"), "\(answer)")
        #expect(seconds < 2, "took \(seconds) s")
        // The first heads were closed to make room: the server reset or closed them.
        var closed = 0
        var buffer = [UInt8](repeating: 0, count: 64)
        for connection in hostile.prefix(100) {
            try connection.raw.socket.setReceiveTimeout(seconds: 0.5)
            switch try? buffer.withUnsafeMutableBytes({ try connection.raw.socket.read(into: $0) }) {
            case nil, .processed(0)?: closed += 1
            default: break
            }
        }
        #expect(closed == 100, "the oldest heads go first")
        let counts = try await stoppedStatistics(server)
        #expect(counts["closed"] ?? 0 >= 2_000 - 256, "\(counts)")
        withExtendedLifetime(hostile) {}
    }

    @Test func aClientReconnectingAHundredTimesASecondCannotHoldTheSlots() async throws {
        // Broken, one such client kept every slot forever: each freed slot went to its next connection.
        let server = try await ChatServerProcess.start(["--max-requests", "100"])
        let hostile = try slowloris(100, port: server.port)
        let port = server.port
        let stop = Atomic<Bool>(false)
        let opened = Atomic<Int>(0)
        let flood = Thread {
            var held: [Connection] = []
            while !stop.load(ordering: .relaxed) {
                if let connection = try? Connection(port: port), (try? connection.send("G")) != nil {
                    held.append(connection)
                    opened.add(1, ordering: .relaxed)
                }
                Thread.sleep(forTimeInterval: 0.005)
            }
        }
        flood.start()
        defer { stop.store(true, ordering: .relaxed) }
        #expect(try await eventually { opened.load(ordering: .relaxed) >= 100 })
        for _ in 0..<3 {
            let (answer, seconds) = try timedPost(server.port)
            #expect(answer.hasPrefix("HTTP/1.1 200 OK\r\n"), "\(answer)")
            #expect(seconds < 2, "took \(seconds) s")
        }
        withExtendedLifetime(hostile) {}
    }

    @Test func eachJoinEncodesItsLinesOnceAndWritesEachListenerOnce() async throws {
        // The issue's 1,024 joins cost 5 s of CPU: one chunk encoded per listener per line, and one write per line.
        // Counted, not timed: sequential joins (the worst case for batching) of `count` listeners.
        let count = 300
        let server = try await ChatServerProcess.start()
        var streams: [Connection] = []
        for index in 0..<count {
            let stream = try Connection(port: server.port)
            try stream.send("GET /chat/room?u\(index) HTTP/1.1\r\nHost: x\r\n\r\n")
            try stream.read { $0.contains("u\(index) connected") }
            streams.append(stream)
        }
        let counts = try await stoppedStatistics(server)
        let chunks = try #require(counts["chunks"])
        let writes = try #require(counts["socket"])
        // Per join: the joiner's status and 3 lines of history, the new count to the others, and "connected": 6
        // chunks, whatever the number of listeners (it was one per listener per line: about count² = 90,000).
        #expect(chunks <= 6 * count, "\(chunks) chunks for \(count) joins")
        // Per join, each listener is written at most once (the status and "connected" together), plus the
        // joiner's head and history and the stop: it was one write per line, about count² = 90,000.
        #expect(writes <= count * (count + 1) / 2 + 4 * count, "\(writes) writes for \(count) joins")
        withExtendedLifetime(streams) {}
    }
}
