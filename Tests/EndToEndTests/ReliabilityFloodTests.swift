import Foundation
import HeraldPosix
import HeraldTestSupport
import HeraldWire
import Synchronization
import Testing

/// Issue 3, point 2: a flooding publisher cannot starve other connections, and the daemon's queued memory has a
/// global bound past which publishers feel back-pressure.
struct ReliabilityFloodTests {
    @Test func aFloodingPublisherDoesNotStarveOtherConnections() async throws {
        let daemon = try await TestDaemon.start(arguments: ["--log-level", "notice"])
        let flooding = Atomic<Bool>(true)
        let flooder = try WireClient.ready(socketPath: daemon.socketPath)
        let frame = Frame.post(.init(name: "flood.nobody.listens", payload: [UInt8](repeating: 7, count: 64))).encoded()
        let chunk = [UInt8]((0..<800).flatMap { _ in frame })
        let thread = Thread {
            // About 3 million posts: many seconds of work for the daemon, bounded all the same.
            for _ in 0..<4000 { try? flooder.sendBytes(chunk) }
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
        #expect(overlapped, "the flood ended before the pings did, so this run proves nothing; make it larger")
        // Fair reads: a turn of the loop reads each connection at most 64 KiB, so the pinger waits for one turn.
        #expect(slowest < .seconds(2), "a ping took \(slowest) during the flood")
        while flooding.load(ordering: .acquiring) {
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    @Test func pastTheGlobalBoundPublishersFeelBackPressureAndMemoryStaysBounded() async throws {
        let bound = 2 << 20
        let daemon = try await TestDaemon.start(arguments: [
            "--queue-bytes", "\(1 << 20)", "--max-queued-bytes", "\(bound)", "--log-level", "notice",
        ])
        // Four subscribers that do not read, each on its own name, so their queues share no frame.
        var stalled: [WireClient] = []
        for index in 0..<4 {
            let client = try WireClient.ready(socketPath: daemon.socketPath)
            try client.subscribe(1, "stall.\(index)")
            stalled.append(client)
        }
        let baseline = try DaemonProbe.residentBytes(of: daemon.pid)
        let publisher = try WireClient.ready(socketPath: daemon.socketPath)
        try publisher.descriptor.setNonBlocking(true)
        var frames: [[UInt8]] = []
        for index in 0..<4 {
            frames.append(
                Frame.post(.init(name: "stall.\(index)", payload: [UInt8](repeating: 1, count: 200))).encoded()
            )
        }
        // Publish until the socket stays full: the daemon has stopped reading.
        let frameList = frames
        let (sent, stuck) = try await blocking { () -> (Int, Int) in
            var sent = 0
            var stuck = 0
            let frames = frameList
            while stuck < 200 {
                let bytes = frames[sent % 4]
                let result = bytes.withUnsafeBytes { raw in
                    Result { () throws(SystemError) -> IOResult<Int> in try publisher.descriptor.send(raw) }
                }
                switch try result.get() {
                case .processed(let count) where count == bytes.count:
                    sent += 1
                    stuck = 0
                case .processed, .wouldBlock:
                    // A partial or refused write: wait for the daemon, which is what back-pressure means.
                    stuck += 1
                    usleep(5000)
                }
                if sent > 1_000_000 { break }
            }
            return (sent, stuck)
        }
        #expect(stuck >= 200, "the daemon kept reading \(sent) posts past its bound")
        try await daemon.process.waitForStderrLine(containing: "reading no connection")
        let grown = try DaemonProbe.residentBytes(of: daemon.pid) - baseline
        #expect(grown < bound + (8 << 20), "the daemon grew by \(grown) bytes")
        // The stalled subscribers drain, and the daemon reads again.
        for client in stalled {
            client.drainAvailable()
        }
        try await daemon.process.waitForStderrLine(containing: "reading connections again")
    }
}

extension WireClient {
    /// Reads and discards whatever is there, in a background thread, until the connection goes quiet for a moment.
    func drainAvailable() {
        let thread = Thread {
            while (try? self.receive()) != nil {}
        }
        thread.start()
    }
}
