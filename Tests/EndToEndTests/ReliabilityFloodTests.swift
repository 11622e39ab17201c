import Foundation
import HeraldPosix
import HeraldTestSupport
import HeraldWire
import Synchronization
import Testing

/// Issue 3, point 2: a flooding publisher cannot starve other connections. (The global bound on queued memory is
/// ReliabilityMemoryBoundTests'.)
struct ReliabilityFloodTests {
    @Test func aFloodingPublisherDoesNotStarveOtherConnections() async throws {
        let daemon = try await TestDaemon.start(arguments: ["--log-level", "notice"])
        let flooding = Atomic<Bool>(true)
        let pingsDone = Atomic<Bool>(false)
        let flooder = try WireClient.ready(socketPath: daemon.socketPath)
        let frame = Frame.post(.init(name: "flood.nobody.listens", payload: [UInt8](repeating: 7, count: 64))).encoded()
        let chunk = [UInt8]((0..<800).flatMap { _ in frame })
        let thread = Thread {
            // Until the pings are done, so the two overlap however fast or loaded the machine is; at most about 12
            // million posts, so the flood is bounded all the same.
            for _ in 0..<16_000 where !pingsDone.load(ordering: .acquiring) { try? flooder.sendBytes(chunk) }
            flooding.store(false, ordering: .releasing)
        }
        thread.start()
        let path = daemon.socketPath
        let other = try await blocking { () -> WireClient in
            let other = try WireClient.ready(socketPath: path)
            try other.subscribe(1, "ping.*")
            return other
        }
        let slowest = try await blocking { () -> Duration in
            var slowest = Duration.zero
            let clock = ContinuousClock()
            for round in 1...20 {
                let start = clock.now
                try other.send(.ping(.init(request: UInt32(round))))
                guard case .ack? = try other.receive() else { throw TestFailure("no ACK for ping \(round)") }
                slowest = max(slowest, clock.now - start)
            }
            return slowest
        }
        let overlapped = flooding.load(ordering: .acquiring)
        pingsDone.store(true, ordering: .releasing)
        #expect(overlapped, "the flood ended before the pings did, so this run proves nothing; make it larger")
        // Fair reads: a turn of the loop reads each connection at most 64 KiB, so the pinger waits for one turn.
        #expect(slowest < .seconds(2), "a ping took \(slowest) during the flood")
        while flooding.load(ordering: .acquiring) {
            try await Task.sleep(for: .milliseconds(50))
        }
    }
}
