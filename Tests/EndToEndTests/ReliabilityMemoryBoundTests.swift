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
            // 1200 posts of 60 KB, each queued for 40 subscribers: 2.9 GB of queued output without the bound.
            if (try? publisher.blast(1200, to: "flood.big", payloadSize: 60_000)) != nil {
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
                usleep(10_000)
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
        #expect(report.posted == 1200)
        #expect(report.dropped > 0)
        let newcomer = try await blocking { try WireClient.ready(socketPath: path, receiveTimeout: 2) }
        let sequence = try await blocking { try newcomer.post("after.flood", "x") }
        #expect(sequence == 1201)
        withExtendedLifetime(stuck) {}
    }
}

extension ReliabilityMemoryBoundTests {
    /// Case 2: retained values have a byte bound (error 21, `TOO_MANY_RETAINED_BYTES`), and their replay on
    /// `SUBSCRIBE` is fed as the subscriber reads: subscribers to `**` that never read used to make heraldd queue
    /// every retained value for each of them as frames never dropped (RSS 6.5 times the global bound), and then
    /// answer nobody. A healthy subscriber still gets every retained value, then the `ACK`, then the live posts
    /// made meanwhile.
    @Test func retainedValuesHaveAByteBoundAndTheirReplayIsFedAsTheSubscriberReads() async throws {
        let retainedBound = 4 << 20
        let queuedBound = 8 << 20
        let daemon = try await TestDaemon.start(arguments: [
            "--max-retained-bytes", "\(retainedBound)", "--queue-bytes", "\(256 << 10)",
            "--max-queued-bytes", "\(queuedBound)", "--log-level", "notice",
        ])
        let path = daemon.socketPath
        let baseline = try DaemonProbe.residentBytes(of: daemon.pid)
        let payload = [UInt8](repeating: 0x62, count: 60_000)

        // One client stores 60 KB values until heraldd refuses: error 21, at the byte bound.
        let (stored, refusal) = try await blocking { () -> (Int, WireError) in
            let client = try WireClient.ready(socketPath: path, receiveTimeout: 10)
            var stored = 0
            while stored < 1000 {
                let request = UInt32(stored + 1)
                try client.send(
                    .post(.init(request: request, name: "big.\(100 + stored)", payload: payload, retain: true))
                )
                switch try client.receive() {
                case .ack?: stored += 1
                case .error(let error)?: return (stored, error)
                case let other: throw TestFailure("unexpected answer to a retained post: \(String(describing: other))")
                }
            }
            throw TestFailure("1000 retained values of 60 KB were accepted")
        }
        #expect(refusal.code.rawValue == 21)
        #expect(refusal.code == .tooManyRetainedBytes)
        // Each value costs its name ("big.100", 7 bytes) and its payload.
        #expect(stored == retainedBound / (7 + payload.count))

        // Clearing a value frees its bytes: a new value fits again.
        let keeper = try await blocking { try WireClient.ready(socketPath: path, receiveTimeout: 10) }
        try await blocking {
            try keeper.post("big.100", "", retain: true, request: 1)
            let again = String(repeating: "c", count: payload.count)
            try keeper.post("big.999", again, retain: true, request: 2)
        }

        // 30 subscribers to `**` that never read. Each would be sent 4 MiB of retained values at once.
        let stuck = try await blocking { () -> [WireClient] in
            try (0..<30).map { _ in
                let client = try WireClient.ready(socketPath: path)
                try client.setReceiveBufferSize(4096)
                try client.send(.subscribe(.init(subscription: 1, pattern: try Pattern("**"))))
                return client
            }
        }
        // A healthy subscriber subscribes and, before it reads anything, a post is made: it is held for after the
        // replay and its ACK.
        let reader = try await blocking { () -> WireClient in
            let reader = try WireClient.ready(socketPath: path, receiveTimeout: 10)
            try reader.send(.subscribe(.init(subscription: 5, pattern: try Pattern("**"))))
            return reader
        }
        let healthy = try await blocking { try WireClient.ready(socketPath: path, receiveTimeout: 2) }
        let live = try await blocking { try healthy.post("live.during", "x", request: 3) }
        let pid = daemon.pid
        let peak = try await blocking { () -> Int in
            var peak = 0
            for request in UInt32(10)..<UInt32(30) {
                try healthy.send(.ping(.init(request: request)))
                guard case .ack(let ack)? = try healthy.receive(), ack.request == request else {
                    throw TestFailure("no ACK for PING \(request)")
                }
                peak = max(peak, try DaemonProbe.residentBytes(of: pid))
                usleep(20_000)
            }
            return peak
        }
        // The retained values, plus what queued output may hold, plus a constant.
        #expect(peak - baseline < retainedBound + queuedBound + (16 << 20), "grew by \(peak - baseline) bytes")
        let report = try await blocking { () -> Frame.StatusReport in
            try healthy.send(.status(.init(request: 77)))
            guard case .statusReport(let report)? = try healthy.receive() else { throw TestFailure("no STATUS_REPORT") }
            return report
        }
        #expect(Int(report.retained) == stored)

        let (retainedNames, ack, after) = try await blocking { () -> ([String], Frame.Ack, [Frame.Notify]) in
            var names: [String] = []
            var ack: Frame.Ack?
            var after: [Frame.Notify] = []
            while after.isEmpty {
                switch try reader.receive() {
                case .notify(let notify)?:
                    if ack == nil {
                        guard notify.retained, notify.subscription == 5 else {
                            throw TestFailure("a live NOTIFY before the ACK: \(notify.name)")
                        }
                        names.append(notify.name)
                    } else {
                        after.append(notify)
                    }
                case .ack(let answer)? where answer.request == 5:
                    ack = answer
                case let other:
                    throw TestFailure("unexpected frame: \(String(describing: other))")
                }
            }
            return (names, ack!, after)
        }
        #expect(retainedNames.count == stored)
        #expect(retainedNames.contains("big.999") && !retainedNames.contains("big.100"))
        #expect(ack.sequence < live)
        #expect(after.first?.name == "live.during" && after.first?.sequence == live && after.first?.retained == false)
        withExtendedLifetime(stuck) {}
    }
}

extension ReliabilityMemoryBoundTests {
    /// Case 3: connect, register a 60 KB will with an hour's delay, close without `BYE`, again and again. Pending
    /// wills used to grow without bound (RSS +626 MiB after 10,000 cycles) and every turn of the loop scanned them
    /// all. Now the wills held, registered or pending, are bounded in count and bytes: past either, `WILL` gets
    /// error 22, `TOO_MANY_WILLS`, and the daemon's memory stays within the bound while a healthy client is
    /// answered throughout.
    @Test func pendingWillsAreBoundedAndPastTheBoundAWillIsRefused() async throws {
        let willBytes = 2 << 20
        let daemon = try await TestDaemon.start(arguments: [
            "--max-will-bytes", "\(willBytes)", "--max-wills", "1000", "--log-level", "notice",
        ])
        let path = daemon.socketPath
        let pid = daemon.pid
        let healthy = try await blocking { try WireClient.ready(socketPath: path, receiveTimeout: 2) }
        let baseline = try DaemonProbe.residentBytes(of: pid)
        let payload = [UInt8](repeating: 0x77, count: 60_000)
        let (accepted, refusals, peak) = try await blocking { () -> (Int, [WireError], Int) in
            var accepted = 0
            var refusals: [WireError] = []
            var peak = 0
            for cycle in 0..<400 {
                let client = try WireClient.ready(socketPath: path, receiveTimeout: 10)
                try client.send(
                    .will(
                        .init(
                            request: 1,
                            delayMilliseconds: Limits.maxWillDelayMilliseconds,
                            name: "presence.\(1000 + cycle)",
                            payload: payload
                        )
                    )
                )
                switch try client.receive() {
                case .ack?: accepted += 1
                case .error(let error)?: refusals.append(error)
                case let other: throw TestFailure("unexpected answer to WILL: \(String(describing: other))")
                }
                // The client goes without BYE: its will, if accepted, is pending for an hour.
                if cycle % 20 == 0 {
                    try healthy.send(.ping(.init(request: UInt32(cycle + 1))))
                    guard case .ack? = try healthy.receive() else { throw TestFailure("no ACK for a PING") }
                    peak = max(peak, try DaemonProbe.residentBytes(of: pid))
                }
            }
            return (accepted, refusals, peak)
        }
        // Each will costs its name ("presence.1000", 13 bytes) and its payload.
        #expect(accepted == willBytes / (13 + payload.count))
        #expect(refusals.count == 400 - accepted)
        #expect(refusals.allSatisfy { $0.code == .tooManyWills && $0.code.rawValue == 22 && $0.request == 1 })
        #expect(peak - baseline < willBytes + (8 << 20), "the daemon grew by \(peak - baseline) bytes")
        let report = try await blocking { () -> Frame.StatusReport in
            try healthy.send(.status(.init(request: 9)))
            guard case .statusReport(let report)? = try healthy.receive() else { throw TestFailure("no STATUS_REPORT") }
            return report
        }
        // No will has fired: they are an hour away.
        #expect(report.posted == 0)
    }
}

extension WireClient {
    /// Connects with a receive timeout of `receiveTimeout` seconds and completes the handshake.
    static func ready(socketPath: String, receiveTimeout: Double) throws -> WireClient {
        let client = try WireClient(socketPath: socketPath, receiveTimeout: receiveTimeout)
        // Version 1, whose final errors these tests were written against.
        try client.send(.hello(.init(minVersion: 1, maxVersion: 1, client: "wire-test")))
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
