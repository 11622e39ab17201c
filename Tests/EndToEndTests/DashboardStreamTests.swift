import Foundation
import HeraldLaunch
import HeraldPosix
import HeraldTestSupport
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A page that stops reading its event stream costs the dashboard bounded memory (issue 32, "How it is built and
/// bounded"): past 256 KiB waiting, its stream ends with a `dropped` event that says why, as the chat server drops a
/// listener that stopped reading, and the dashboard goes on serving.
@Suite struct DashboardStreamTests {
    @Test(.hangGuard)
    func aPageThatStopsReadingItsStreamIsDroppedWithAMessage() async throws {
        let daemon = try await TestDaemon.start()
        let dashboard = try await DashboardProcess.start(daemon)
        defer { dashboard.process.signal(SIGKILL) }

        // A client with a tiny receive buffer, set before it connects so the window it offers stays small, that
        // asks for the stream and then reads nothing.
        let socket = FileDescriptor(
            owning: Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        )
        var small: Int32 = 4096
        _ = setsockopt(socket.rawValue, SOL_SOCKET, SO_RCVBUF, &small, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = dashboard.port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(socket.rawValue, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        try #require(connected == 0, "connect: errno \(errno)")
        let request = "GET /events?token=\(dashboard.token) HTTP/1.1\r\nHost: 127.0.0.1:\(dashboard.port)\r\n\r\n"
        try Array(request.utf8).withUnsafeBytes { try socket.writeAll($0) }

        // What the client gets when it reads at last: the updates it had, then the message, then the end. It reads
        // on a thread of its own as soon as the dashboard logs the drop: the server gives a dropped stream its linger
        // (2 s) to take the rest, which a reader waiting for the shared pool of a loaded whole run missed. It reads
        // until the end, or 20 s without a byte, or 60 s in all: a stream that was not ended goes on sending ticks.
        try socket.setReceiveTimeout(seconds: 20)
        let process = dashboard.process
        let reader = StartedThread { [socket = socket.rawValue] () throws -> [UInt8] in
            let waiting = ContinuousClock.now
            while !process.stderr.contains("the page read too slowly"), ContinuousClock.now - waiting < .seconds(120) {
                usleep(1_000)
            }
            let reading = ContinuousClock.now
            var received: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 64 * 1024)
            while ContinuousClock.now - reading < .seconds(60) {
                let count = buffer.withUnsafeMutableBytes { Glibc.read(socket, $0.baseAddress, $0.count) }
                guard count > 0 else { break }
                received += buffer[..<count]
            }
            return received
        }

        // A flood of posts with large payloads to many names: every update is large. It runs on a thread of its own:
        // on the pool, which a whole parallel run starves, it made a round every 5 s and took 61 s to fill the
        // stream. A round every 10 ms (20,000 posts a second) fills every update the dashboard sends, 4 a second,
        // without taking the cores from the rest of the run, as the daemon's own pace (100,000 a second) did.
        let publisher = try WireClient.ready(socketPath: daemon.socketPath)
        let stopFlooding = Atomic(false)
        let flood = StartedThread { () throws -> Int in
            var round = 0
            while !stopFlooding.load(ordering: .relaxed) {
                round += 1
                try publisher.blast(200, to: "flood.n\(round % 50)", payloadSize: 900)
                usleep(10_000)
            }
            return round
        }
        let clock = ContinuousClock()
        let started = clock.now
        let dropped = try await eventually(timeout: .seconds(120)) {
            dashboard.process.stderr.contains("the page read too slowly")
        }
        stopFlooding.store(true, ordering: .relaxed)
        let rounds = try await flood.value
        let log = String(dashboard.process.stderr.suffix(1000))
        #expect(dropped, "the slow stream was not dropped after \(rounds) rounds; stderr: \(log)")
        print("dashboard: a stream left unread was dropped after \(clock.now - started) and \(rounds * 200) posts")

        let received = try await reader.value
        let text = String(decoding: received, as: UTF8.self)
        let tail = String(text.suffix(300)).debugDescription
        let said = text.contains("event: dropped\ndata: {\"reason\":\"the page read too slowly")
        let ended = text.hasSuffix("\r\n0\r\n\r\n")
        #expect(said, "the client read \(received.count) bytes, ending with \(tail)")
        #expect(ended, "the stream ended with its last chunk: \(tail)")

        // The dashboard goes on serving.
        #expect(try await dashboard.request("GET", "/?token=\(dashboard.token)").status == 200)
    }
}
