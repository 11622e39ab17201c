import HeraldPosix
import Testing

@testable import HeraldHTTP

#if os(Linux)
/// Ending a stream for a client too slow to read it (`abandon`), with the server stepped by hand so that what is
/// queued and what is written are exactly what the test says.
@Suite struct HTTPServerAbandonTests {
    /// Streams every request.
    final class Streamer: HTTPHandler {
        typealias ID = HTTPServer.ConnectionID
        var started: [ID] = []
        var closed: [ID] = []

        var nextDeadline: UInt64? { nil }

        func handle(_ request: HTTPRequest, on connection: ID, server: HTTPServer) -> HTTPServer.Reply {
            .stream(.chunked(contentType: "text/event-stream"))
        }

        func streamStarted(_ connection: ID, request: HTTPRequest, server: HTTPServer) { started.append(connection) }
        func streamClosed(_ connection: ID, server: HTTPServer) { closed.append(connection) }
        func streamDrained(_ connection: ID, bytes: Int, server: HTTPServer) {}
        func deadlineReached(server: HTTPServer) {}
    }

    /// A server stepped by hand, and a client whose request has started a stream.
    struct OpenStream: ~Copyable {
        let server: HTTPServer
        let handler: Streamer
        let client: FileDescriptor
        let stream: HTTPServer.ConnectionID

        init(configuration: HTTPServer.Configuration = HTTPServer.Configuration()) throws {
            let server = try HTTPServer(host: "127.0.0.1", port: 0, stopSignals: [], configuration: configuration)
            let handler = Streamer()
            server.handler = handler
            let client = try TCPSocket.connect(host: "127.0.0.1", port: server.port)
            try #require(try server.listener.waitForInput(orFrom: -1, timeoutMilliseconds: 5_000).this)
            server.acceptConnections()
            let id = try #require(server.connections.keys.first)
            try Array("GET /events HTTP/1.1\r\nHost: x\r\n\r\n".utf8).withUnsafeBytes { try client.writeAll($0) }
            try #require(try server.connections[id]!.socket.waitForInput(orFrom: -1, timeoutMilliseconds: 5_000).this)
            server.connectionReady(id, events: .readable)
            stream = try #require(handler.started.first)
            server.flushPending()
            self.server = server
            self.handler = handler
            self.client = client
        }
    }

    /// How many bytes of a stream the kernel takes from the server while its client reads nothing, with the
    /// server's `streamSendBuffer` set to `sendBuffer`.
    static func bytesTakenByTheKernel(sendBuffer: Int?) throws -> Int {
        var configuration = HTTPServer.Configuration()
        configuration.streamSendBuffer = sendBuffer
        let open = try OpenStream(configuration: configuration)
        let (server, stream) = (open.server, open.stream)
        // 16 KiB at a time until the kernel takes no more: what it took is what was sent less what waits.
        var sent = 0
        while server.queuedBytes(of: stream)! == 0, sent < 64 << 20 {
            server.send(Array(repeating: UInt8(ascii: "x"), count: 16 * 1024), to: stream)
            sent += 16 * 1024
            server.flushPending()
        }
        return sent - server.queuedBytes(of: stream)!
    }

    /// A stream's client that reads nothing can leave at most the stream's send buffer in the server's kernel (and
    /// its own receive buffer in its own): the server's queue, which the handler bounds and sees, starts to grow after
    /// hundreds of kilobytes, not the megabytes the kernel would grow to by itself.
    @Test func aStreamClientThatReadsNothingLeavesAtMostItsSendBufferInTheKernel() throws {
        let bounded = try Self.bytesTakenByTheKernel(sendBuffer: 64 * 1024)
        let grown = try Self.bytesTakenByTheKernel(sendBuffer: nil)
        print("the kernel took \(bounded) bytes with a send buffer of 64 KiB, \(grown) with the default")
        // 2 × 64 KiB reserved, plus the client's receive buffer, whose default on Linux is 128 KiB (tcp_rmem).
        #expect(bounded < 512 * 1024)
        #expect(bounded < grown, "the setting changed nothing")
    }

    @Test func abandoningAStreamDiscardsWhatWaitsAndSendsTheLastChunkThenTheEnd() throws {
        let open = try OpenStream()
        let (server, handler, stream) = (open.server, open.handler, open.stream)
        try open.client.setReceiveTimeout(seconds: 5)

        // Three large chunks queued and not written (no flush between): what a slow client leaves waiting.
        for _ in 0..<3 { server.send(Array(repeating: UInt8(ascii: "x"), count: 100_000), to: stream) }
        #expect(server.queuedBytes(of: stream)! > 300_000)
        server.abandon(stream, lastChunk: Array("event: dropped\ndata: too slow\n\n".utf8))
        #expect(server.queuedBytes(of: stream)! < 100, "what waited is discarded at once")
        #expect(server.streamConnectionCount == 0)
        // A stream abandoned takes no more chunks.
        server.send(Array("late".utf8), to: stream)
        server.flushPending()

        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let result = try buffer.withUnsafeMutableBytes { try open.client.read(into: $0) }
            guard case .processed(let count) = result, count > 0 else { break }
            received += buffer[..<count]
        }
        let text = String(decoding: received, as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(!text.contains("xxxx"), "nothing that waited was sent")
        #expect(!text.contains("late"))
        #expect(
            text.hasSuffix("\r\n\r\n1f\r\nevent: dropped\ndata: too slow\n\n\r\n0\r\n\r\n"),
            "\(text.debugDescription)"
        )
        #expect(handler.closed.isEmpty, "the handler ended it itself: it is not told")
    }
}
#endif
