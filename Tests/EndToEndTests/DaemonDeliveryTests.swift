import Foundation
import HeraldPosix
import HeraldTestSupport
import HeraldWire
import Testing

/// heraldd's delivery, driven over raw sockets with the wire codec: no library in between.
struct DaemonDeliveryTests {
    @Test func deliversAPostWithTheSendersKernelCredentials() async throws {
        let daemon = try await TestDaemon.start()
        let subscriber = try WireClient.ready(socketPath: daemon.socketPath)
        try subscriber.subscribe(1, "session.*")
        let publisher = try WireClient.ready(socketPath: daemon.socketPath)
        let sequence = try publisher.post("session.willResignActive", #"{"user":"alice"}"#)
        guard case .notify(let notify) = try subscriber.receive() else {
            Issue.record("expected a NOTIFY")
            return
        }
        #expect(notify.name == "session.willResignActive")
        #expect(notify.payload == Array(#"{"user":"alice"}"#.utf8))
        #expect(notify.sequence == sequence)
        #expect(notify.pid == getpid())
        #expect(notify.uid == geteuid())
        #expect(notify.gid == getegid())
        #expect(notify.subscription == 0)
        let now = UInt64(Date().timeIntervalSince1970 * 1e9)
        #expect(notify.time <= now && now - notify.time < 60_000_000_000)
    }

    @Test func replaysRetainedValuesBeforeTheAckAndThenLivePosts() async throws {
        let daemon = try await TestDaemon.start()
        let publisher = try WireClient.ready(socketPath: daemon.socketPath)
        try publisher.post("session.state", #"{"state":"away"}"#, retain: true)
        let subscriber = try WireClient.ready(socketPath: daemon.socketPath)
        let beforeAck = try subscriber.subscribe(5, "session.*")
        guard beforeAck.count == 1, case .notify(let replay) = beforeAck[0] else {
            Issue.record("expected one retained NOTIFY before the ACK, got \(beforeAck)")
            return
        }
        #expect(replay.retained)
        #expect(replay.subscription == 5)
        #expect(replay.payload == Array(#"{"state":"away"}"#.utf8))
        try publisher.post("session.state", #"{"state":"active"}"#, retain: true)
        guard case .notify(let live) = try subscriber.receive() else {
            Issue.record("expected the live NOTIFY")
            return
        }
        #expect(!live.retained)
        #expect(live.payload == Array(#"{"state":"active"}"#.utf8))
    }

    /// heraldd decodes a read's whole frames where they lie and keeps only what is left: frames cut anywhere
    /// across reads must arrive whole and in order. A PING round trip on another connection after each piece
    /// makes sure the daemon has read the piece before the next is sent (one loop, level-triggered).
    @Test func framesCutAnywhereAcrossReadsArriveWhole() async throws {
        let daemon = try await TestDaemon.start()
        var generator = SystemRandomNumberGenerator()
        let seed = UInt64.random(in: 1...UInt64.max, using: &generator)
        let socketPath = daemon.socketPath
        // Blocking sockets, so off the cooperative pool.
        let (payloads, received) = try await blocking { () throws -> ([String], [Frame]) in
            let subscriber = try WireClient.ready(socketPath: socketPath)
            try subscriber.subscribe(1, "cut.*")
            let publisher = try WireClient.ready(socketPath: socketPath)
            let barrier = try WireClient.ready(socketPath: socketPath)
            var state = seed
            func next(_ bound: Int) -> Int {
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                return Int((state >> 33) % UInt64(bound))
            }
            let payloads = (0..<60).map { index in "post \(index) " + String(repeating: "x", count: next(200)) }
            var stream: [UInt8] = []
            for (index, payload) in payloads.enumerated() {
                stream += Frame.post(.init(name: "cut.\(index % 3)", payload: Array(payload.utf8))).encoded()
            }
            var offset = 0
            var request: UInt32 = 0
            while offset < stream.count {
                // Pieces of 1 to 7 bytes (inside a header) or up to 300 (across frames).
                let piece = min(stream.count - offset, 1 + (next(2) == 0 ? next(7) : next(300)))
                try publisher.sendBytes(Array(stream[offset..<offset + piece]))
                offset += piece
                request += 1
                try barrier.send(.ping(.init(request: request)))
                guard case .ack(let ack) = try barrier.receive(), ack.request == request else {
                    throw TestFailure("seed \(seed): no ACK for PING \(request)")
                }
            }
            var received: [Frame] = []
            for _ in payloads {
                guard let frame = try subscriber.receive() else { break }
                received.append(frame)
            }
            return (payloads, received)
        }
        #expect(received.count == payloads.count, "seed \(seed)")
        for (index, (payload, frame)) in zip(payloads, received).enumerated() {
            guard case .notify(let notify) = frame else {
                Issue.record("seed \(seed): expected NOTIFY \(index), got \(frame)")
                return
            }
            #expect(notify.name == "cut.\(index % 3)", "seed \(seed)")
            #expect(notify.payload == Array(payload.utf8), "seed \(seed), post \(index)")
        }
    }

    /// heraldd writes a turn's output to all its connections in one io_uring batch, or with one send each under
    /// `--no-send-batching` (and on kernels without io_uring); after a busy turn it lets input gather, unless
    /// `--coalesce-us 0`. Either way, with one subscriber that reads nothing until the end, so that its socket fills
    /// and batched sends to it are partial or refused, every subscriber gets every post exactly once and in order.
    @Test(arguments: [[], ["--no-send-batching"], ["--coalesce-us", "0"]])
    func everySubscriberGetsEveryPostOnceInOrderWithOrWithoutBatchedSends(_ arguments: [String]) async throws {
        // A queue large enough that nothing is dropped: this is about the writes, not the bound.
        let daemon = try await TestDaemon.start(arguments: arguments + ["--queue-bytes", "\(64 << 20)"])
        let expectedLine =
            arguments.contains("--no-send-batching")
            ? "sends: one send(2) per connection (--no-send-batching)"
            : "sends: each turn's output in one io_uring batch"
        #expect(
            daemon.process.stderrLines.contains { $0.contains(expectedLine) },
            "heraldd did not say \"\(expectedLine)\": \(daemon.process.stderr)"
        )
        let socketPath = daemon.socketPath
        // Posts go out in bursts of 100 frames per write, 2 KB each, so that one turn leaves each subscriber hundreds
        // of KB: batched sends larger than a socket takes, cut short by the kernel (small sends are all or nothing).
        let total = 600
        let burst = 100
        let sequences = try await blocking { () throws -> [[UInt64]] in
            let subscribers = try (0..<4).map { index in
                let client = try WireClient.ready(socketPath: socketPath)
                try client.subscribe(UInt32(index + 1), "batch.*")
                return client
            }
            let publisher = try WireClient.ready(socketPath: socketPath)
            let payload = [UInt8](repeating: 0x42, count: 2000)
            var received = [[UInt64]](repeating: [], count: subscribers.count)
            for first in stride(from: 0, to: total, by: burst) {
                var bytes: [UInt8] = []
                for index in first..<first + burst {
                    bytes += Frame.post(.init(name: "batch.\(index % 7)", payload: payload)).encoded()
                }
                try publisher.sendBytes(bytes)
                // Subscribers 1...3 keep up with each burst; subscriber 0 reads nothing until the end.
                for reader in 1..<subscribers.count {
                    while received[reader].count < first + burst,
                        case .notify(let notify)? = try subscribers[reader].receive()
                    {
                        received[reader].append(notify.sequence)
                    }
                }
            }
            while received[0].count < total, case .notify(let notify)? = try subscribers[0].receive() {
                received[0].append(notify.sequence)
            }
            return received
        }
        let first = sequences[0].first ?? 0
        let expected = Array(first..<first + UInt64(total))
        for (reader, received) in sequences.enumerated() {
            #expect(
                received == expected,
                "subscriber \(reader): \(received.count) notifications, not 1...\(total) in order"
            )
        }
    }

    /// The acknowledged subscription: a post made by another connection right after the ACK is never
    /// missed. Repeated, because a race would show only sometimes.
    @Test func neverMissesAPostMadeAfterTheAck() async throws {
        let daemon = try await TestDaemon.start()
        let publisher = try WireClient.ready(socketPath: daemon.socketPath)
        for round in UInt32(1)...200 {
            let subscriber = try WireClient.ready(socketPath: daemon.socketPath)
            try subscriber.subscribe(round, "race.\(round)")
            let sequence = try publisher.post("race.\(round)")
            guard case .notify(let notify) = try subscriber.receive() else {
                Issue.record("round \(round): no NOTIFY")
                return
            }
            #expect(notify.sequence == sequence)
        }
    }

    @Test(
        arguments: [
            ("a request before HELLO", Frame.ping(.init(request: 1)).encoded(), WireError.Code.helloRequired),
            ("unknown frame type", [3, 0, 0, 0, 0x7F, 0, 0], WireError.Code.unknownFrameType),
            ("oversized length", [0xFF, 0xFF, 0xFF, 0x7F, 0x02, 0], WireError.Code.frameTooLarge),
        ] as [(String, [UInt8], WireError.Code)]
    )
    func answersBadInputBeforeHelloWithAnErrorAndCloses(
        label: String,
        bytes: [UInt8],
        code: WireError.Code
    ) async throws {
        let daemon = try await TestDaemon.start()
        let bad = try WireClient(socketPath: daemon.socketPath)
        try bad.sendBytes(bytes)
        try expectErrorThenClose(bad, code: code, label)
    }

    static let afterHello: [(String, [UInt8], WireError.Code)] = [
        ("unknown frame type", [2, 0, 0, 0, 0x7F, 0], .unknownFrameType),
        ("daemon frame type", [2, 0, 0, 0, 0x81, 0], .unknownFrameType),
        ("oversized length", [0x00, 0x00, 0x00, 0x10, 0x02, 0], .frameTooLarge),
        ("length under two", [1, 0, 0, 0, 0x02], .malformedFrame),
        ("truncated body", [4, 0, 0, 0, 0x06, 0, 1, 0], .malformedFrame),
        ("name not UTF-8", [9, 0, 0, 0, 0x02, 0, 0, 0, 0, 0, 2, 0xC3, 0x28], .invalidName),
        ("malformed name", [11, 0, 0, 0, 0x02, 0, 0, 0, 0, 0, 4] + Array("a..b".utf8), .invalidName),
        ("double star in the middle", [13, 0, 0, 0, 0x03, 0, 1, 0, 0, 0, 6] + Array("a.**.b".utf8), .invalidPattern),
        ("second hello", Frame.hello(.init(client: "again")).encoded(), .unexpectedHello),
        ("undefined flags", [6, 0, 0, 0, 0x06, 0x80, 1, 0, 0, 0], .invalidFlags),
        ("reserved name", Frame.post(.init(name: "herald.dropped", payload: [])).encoded(), .reservedName),
    ]

    @Test(arguments: afterHello)
    func answersBadInputWithAnErrorFrameThenClosesLeavingOthersUnaffected(
        label: String,
        bytes: [UInt8],
        code: WireError.Code
    ) async throws {
        let daemon = try await TestDaemon.start()
        let healthy = try WireClient.ready(socketPath: daemon.socketPath)
        try healthy.subscribe(1, "**")
        let bad = try WireClient.ready(socketPath: daemon.socketPath)
        try bad.sendBytes(bytes)
        try expectErrorThenClose(bad, code: code, label)
        // Everyone else carries on.
        let sequence = try healthy.post("after.bad.input")
        guard case .notify(let notify) = try healthy.receive() else {
            Issue.record("\(label): the healthy client got nothing")
            return
        }
        #expect(notify.sequence == sequence)
    }

    @Test func refusesAHelloWithAnUnknownVersion() async throws {
        let daemon = try await TestDaemon.start()
        let client = try WireClient(socketPath: daemon.socketPath)
        try client.send(.hello(.init(minVersion: 7, maxVersion: 9, client: "future")))
        try expectErrorThenClose(client, code: .unsupportedVersion, "version 7...9")
    }

    @Test func reportsStatusCounters() async throws {
        let daemon = try await TestDaemon.start()
        let client = try WireClient.ready(socketPath: daemon.socketPath)
        try client.subscribe(1, "a.*")
        try client.post("a.b", "1", retain: true)
        _ = try client.receive()  // its own NOTIFY
        try client.send(.status(.init(request: 77)))
        guard case .statusReport(let report) = try client.receive() else {
            Issue.record("no STATUS_REPORT")
            return
        }
        #expect(report.request == 77)
        #expect(report.pid == daemon.pid)
        #expect(report.connections == 1)
        #expect(report.subscriptions == 1)
        #expect(report.retained == 1)
        #expect(report.posted == 1)
    }

    /// A subscriber that stops reading costs the daemon its queue bound, not more; the publisher and a
    /// healthy subscriber are not slowed; the stalled one learns exactly how many it missed.
    @Test func dropsOldestForAStalledSubscriberAndReportsTheExactCount() async throws {
        let daemon = try await TestDaemon.start(arguments: ["--queue-bytes", "16384"])
        let socketPath = daemon.socketPath
        let total = 20000  // about 4.8 MB: far past the socket buffers and the 16 KiB queue
        // Seconds of blocking socket work: off the cooperative pool, which it would otherwise hold from every other
        // test running meanwhile.
        let (received, stalledFrames) = try await blocking { () throws -> ([UInt64], [Frame]) in
            let stalled = try WireClient.ready(socketPath: socketPath)
            try stalled.subscribe(1, "flood")
            let healthy = try WireClient.ready(socketPath: socketPath)
            try healthy.subscribe(1, "flood")
            let publisher = try WireClient.ready(socketPath: socketPath)
            let payload = [UInt8](repeating: 0x41, count: 200)
            var received: [UInt64] = []
            received.reserveCapacity(total)
            for index in 0..<total {
                try publisher.send(.post(.init(request: index == total - 1 ? 1 : 0, name: "flood", payload: payload)))
                // Keep the healthy subscriber reading while the flood goes on.
                if index % 100 == 99 {
                    while received.count < index - 50, case .notify(let notify)? = try healthy.receive() {
                        received.append(notify.sequence)
                    }
                }
            }
            while received.count < total, case .notify(let notify)? = try healthy.receive() {
                received.append(notify.sequence)
            }
            // Now the stalled subscriber reads everything it has, up to the ACK of a PING sent after the flood.
            var frames: [Frame] = []
            try stalled.send(.ping(.init(request: 500)))
            while let frame = try stalled.receive() {
                if case .ack(let ack) = frame, ack.request == 500 { break }
                frames.append(frame)
            }
            return (received, frames)
        }
        #expect(received.count == total)
        #expect(zip(received, received.dropFirst()).allSatisfy { $0 + 1 == $1 }, "healthy subscriber out of order")

        var delivered = 0
        var droppedCount: UInt64 = 0
        var notices = 0
        for frame in stalledFrames {
            switch frame {
            case .notify: delivered += 1
            case .dropped(let dropped):
                droppedCount += dropped.count
                notices += 1
                #expect(dropped.lastSequence - dropped.firstSequence + 1 >= dropped.count)
            default: Issue.record("unexpected \(frame)")
            }
        }
        #expect(droppedCount > 0)
        #expect(notices >= 1)
        #expect(UInt64(delivered) + droppedCount == UInt64(total), "every post is delivered or counted as dropped")
    }

    private func expectErrorThenClose(_ client: WireClient, code: WireError.Code, _ label: String) throws {
        let frame = try client.receive()
        guard case .error(let error) = frame else {
            Issue.record("\(label): expected an ERROR frame, got \(String(describing: frame))")
            return
        }
        #expect(error.code == code, "\(label): \(error)")
        #expect(!error.reason.isEmpty)
        #expect(try client.receive() == nil, "\(label): the connection should be closed after the ERROR")
    }
}
