import Foundation
import HeraldPosix
import HeraldTestSupport
import HeraldWire
import Synchronization
import Testing

/// Issue 15, cases 1 to 3: every byte heraldd holds for a client is bounded, and reaching a bound costs the client
/// that holds the memory, never a healthy one. Each test runs the attack with real processes against the real
/// heraldd, scaled down with small flags so it takes seconds.
struct ReliabilityMemoryBoundTests {
    /// Case 1: 40 subscribers to `**` that never read, and a publisher flooding 60 KB posts, take the queued output
    /// past `--max-queued-bytes`. heraldd used to stop reading every connection then, for good: a healthy client's
    /// PING went unanswered until the stuck subscribers closed. Now the stuck subscribers give the memory back and
    /// everyone else is read and answered, during the flood and after it.
    @Test func stuckSubscribersPastTheGlobalBoundDoNotSilenceHealthyClients() async throws {
        let bound = 4 << 20
        let daemon = try await TestDaemon.start(arguments: [
            "--queue-bytes", "\(256 << 10)", "--max-queued-bytes", "\(bound)", "--log-level", "notice",
        ])
        let path = daemon.socketPath
        let stuck = try await blocking { () -> [WireClient] in
            try (0..<40).map { _ in
                let client = try WireClient.ready(socketPath: path)
                try client.setReceiveBufferSize(4096)
                try client.subscribe(1, "**")
                return client
            }
        }
        let healthy = try await blocking { try WireClient.ready(socketPath: path, receiveTimeout: 2) }
        let baseline = try DaemonProbe.residentBytes(of: daemon.pid)

        let flooding = Atomic<Bool>(true)
        let floodCompleted = Atomic<Bool>(false)
        let publisher = try await blocking { try WireClient.ready(socketPath: path, receiveTimeout: 60) }
        let flood = Thread {
            // 600 posts of 60 KB, each queued for 40 subscribers: 1.4 GB of queued output without the bound.
            if (try? publisher.blast(600, to: "flood.big", payloadSize: 60_000)) != nil {
                floodCompleted.store(true, ordering: .releasing)
            }
            flooding.store(false, ordering: .releasing)
        }
        flood.start()

        // A healthy client's requests are answered throughout, each within a generous deadline (the broken daemon
        // never answered them); the daemon's memory is sampled meanwhile.
        let pid = daemon.pid
        let (pings, duringFlood, peak) = try await blocking { () -> (Int, Int, Int) in
            var pings = 0
            var duringFlood = 0
            var peak = 0
            var request: UInt32 = 0
            while flooding.load(ordering: .acquiring) || pings < 20 {
                request += 1
                let flooded = flooding.load(ordering: .acquiring)
                try healthy.send(.ping(.init(request: request)))
                guard case .ack(let ack)? = try healthy.receive(), ack.request == request else {
                    throw TestFailure("no ACK for PING \(request)")
                }
                pings += 1
                if flooded { duringFlood += 1 }
                peak = max(peak, try DaemonProbe.residentBytes(of: pid))
                usleep(20_000)
            }
            return (pings, duringFlood, peak)
        }
        #expect(pings >= 20)
        #expect(duringFlood >= 3, "only \(duringFlood) PINGs overlapped the flood, so this run proves little")
        let completed = floodCompleted.load(ordering: .acquiring)
        #expect(completed, "the publisher was not read to the end of its flood")
        _ = try await daemon.process.waitForStderrLine(containing: "queued output passed")
        // The bound, plus a constant: the arena a turn's posts are encoded in, each connection's partial input, and
        // the allocator's slack.
        #expect(peak - baseline < bound + (16 << 20), "the daemon grew by \(peak - baseline) bytes")

        // After the flood, the daemon still answers, and says it dropped the stuck subscribers' frames.
        let report = try await blocking { () -> Frame.StatusReport in
            try healthy.send(.status(.init(request: 77)))
            guard case .statusReport(let report)? = try healthy.receive() else { throw TestFailure("no STATUS_REPORT") }
            return report
        }
        #expect(report.posted == 600)
        #expect(report.dropped > 0)
        let newcomer = try await blocking { try WireClient.ready(socketPath: path, receiveTimeout: 2) }
        let sequence = try await blocking { try newcomer.post("after.flood", "x") }
        #expect(sequence == 601)
        withExtendedLifetime(stuck) {}
    }
}

extension WireClient {
    /// Connects with a receive timeout of `receiveTimeout` seconds and completes the handshake.
    static func ready(socketPath: String, receiveTimeout: Double) throws -> WireClient {
        let client = try WireClient(socketPath: socketPath, receiveTimeout: receiveTimeout)
        try client.send(.hello(.init(client: "wire-test")))
        guard case .welcome = try client.receive() else { throw TestFailure("no WELCOME") }
        return client
    }

    /// Shrinks the socket's receive buffer, so a client that does not read stops taking the daemon's output soon.
    func setReceiveBufferSize(_ bytes: Int32) throws {
        var value = bytes
        guard setsockopt(descriptor.rawValue, SOL_SOCKET, SO_RCVBUF, &value, socklen_t(MemoryLayout<Int32>.size)) == 0
        else { throw TestFailure("cannot set SO_RCVBUF: errno \(errno)") }
    }
}
