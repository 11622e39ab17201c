import HeraldPosix
import Testing

@testable import HeraldHTTP

#if os(Linux)
/// Closing the longest-waiting connection to make room, driven one step at a time: the test calls the server's own
/// accept and read steps instead of running its loop, so what the server has read when eviction is chosen is exactly
/// what the test says, as on a machine so loaded that the loop had not got to a connection yet.
@Suite struct HTTPServerEvictionTests {
    /// Answers every request with 200 "hello".
    final class Hello: HTTPHandler {
        typealias ID = HTTPServer.ConnectionID

        var nextDeadline: UInt64? { nil }

        func handle(_ request: HTTPRequest, on connection: ID, server: HTTPServer) -> HTTPServer.Reply {
            .response(.text("hello"))
        }

        func streamStarted(_ connection: ID, request: HTTPRequest, server: HTTPServer) {}
        func streamClosed(_ connection: ID, server: HTTPServer) {}
        func streamDrained(_ connection: ID, bytes: Int, server: HTTPServer) {}
        func deadlineReached(server: HTTPServer) {}
    }

    /// A server with room for one request connection, whose requests may be closed to make room at once.
    private func makeServer() throws -> (HTTPServer, Hello) {
        var configuration = HTTPServer.Configuration()
        configuration.maximumRequestConnections = 1
        configuration.evictionGrace = .zero
        let server = try HTTPServer(host: "127.0.0.1", port: 0, stopSignals: [], configuration: configuration)
        let handler = Hello()
        server.handler = handler
        return (server, handler)
    }

    /// A client connection, and the server's id for it.
    final class Client {
        let socket: FileDescriptor
        let id: UInt64

        /// Connects and has the server accept the connection, with one step of its accept loop.
        init(_ server: HTTPServer) throws {
            socket = try TCPSocket.connect(host: "127.0.0.1", port: server.port)
            try socket.setReceiveTimeout(seconds: 5)
            let before = Set(server.connections.keys)
            try #require(try server.listener.waitForInput(orFrom: -1, timeoutMilliseconds: 5_000).this)
            server.acceptConnections()
            id = try #require(Set(server.connections.keys).subtracting(before).first)
        }

        /// Sends `text` and waits until the server's end of the connection has it to read, unread.
        func send(_ text: String, to server: HTTPServer) throws {
            try Array(text.utf8).withUnsafeBytes { try socket.writeAll($0) }
            let connection = try #require(server.connections[id])
            try #require(try connection.socket.waitForInput(orFrom: -1, timeoutMilliseconds: 5_000).this)
        }

        /// Everything received until the server closes (or resets) the connection, or 5 s of silence.
        func readToEnd() -> String {
            var received: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let result = try? buffer.withUnsafeMutableBytes { try socket.read(into: $0) }
                guard case .processed(let count)? = result, count > 0 else {
                    return String(decoding: received, as: UTF8.self)
                }
                received += buffer[..<count]
            }
        }
    }

    @Test func aServerAtItsLimitClosesNothingWhileNobodyWaitsToBeAccepted() throws {
        let (server, _) = try makeServer()
        // Its accept loop comes round once more after taking the last newcomer: at the limit, with nobody waiting.
        let first = try Client(server)
        server.acceptConnections()
        #expect(server.connections[first.id] != nil)
        #expect(server.statistics.evictedConnections == 0)
        try first.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n", to: server)
        server.connectionReady(first.id, events: .readable)
        server.flushPending()
        var answer = [UInt8](repeating: 0, count: 256)
        let result = try answer.withUnsafeMutableBytes { try first.socket.read(into: $0) }
        guard case .processed(let count) = result else {
            Issue.record("no answer: \(result)")
            return
        }
        #expect(String(decoding: answer[..<count], as: UTF8.self).hasPrefix("HTTP/1.1 200 OK\r\n"))
    }

    @Test func aCompleteRequestUnreadInItsSocketIsAnsweredInsteadOfEvicted() throws {
        let (server, _) = try makeServer()
        let first = try Client(server)
        try first.send("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", to: server)
        // The one slot is taken by a request that has not been read: a newcomer makes the server choose whom to close.
        let second = try Client(server)
        server.flushPending()
        let answer = first.readToEnd()
        #expect(answer.hasPrefix("HTTP/1.1 200 OK\r\n"), "the first client got \(answer.debugDescription)")
        #expect(answer.hasSuffix("\r\n\r\nhello"), "\(answer.debugDescription)")
        #expect(server.connections[first.id] == nil, "answered, it was closed to make room")
        #expect(server.connections[second.id] != nil)
    }

    @Test func aKeptAliveRequestUnreadInItsSocketIsAnsweredBeforeItsConnectionIsClosed() throws {
        let (server, _) = try makeServer()
        let first = try Client(server)
        try first.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n", to: server)
        let second = try Client(server)
        server.flushPending()
        let answer = first.readToEnd()
        // Served, then idle: the connection that has waited longest is still the one to go, but after its answer.
        #expect(answer.hasPrefix("HTTP/1.1 200 OK\r\n"), "the first client got \(answer.debugDescription)")
        #expect(answer.hasSuffix("\r\n\r\nhello"), "\(answer.debugDescription)")
        #expect(server.statistics.evictedConnections == 1)
        #expect(server.connections[second.id] != nil)
    }

    @Test func anAnswerQueuedThisTurnIsWrittenBeforeItsConnectionIsEvicted() throws {
        let (server, _) = try makeServer()
        let first = try Client(server)
        try first.send("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", to: server)
        // The loop reads and answers it; the answer is written at the end of the turn, but a newcomer comes first.
        server.connectionReady(first.id, events: .readable)
        #expect(server.connections[first.id]?.phase == .closing)
        let second = try Client(server)
        server.flushPending()
        let answer = first.readToEnd()
        #expect(answer.hasPrefix("HTTP/1.1 200 OK\r\n"), "the first client got \(answer.debugDescription)")
        #expect(answer.hasSuffix("\r\n\r\nhello"), "\(answer.debugDescription)")
        #expect(server.connections[first.id] == nil)
        #expect(server.connections[second.id] != nil)
    }

    @Test func aSlowHeadIsStillEvictedOnceWhatItSentIsRead() throws {
        let (server, _) = try makeServer()
        let first = try Client(server)
        try first.send("GET / HTTP/1.1\r\nHo", to: server)
        let second = try Client(server)
        server.flushPending()
        #expect(first.readToEnd() == "", "a slowloris gets no answer, only closed")
        #expect(server.connections[first.id] == nil)
        #expect(server.connections[second.id] != nil)
        #expect(server.statistics.evictedConnections == 1)
    }

    @Test func aHeadPastTheLimitUnreadInItsSocketIsClosedWithoutBeingBuffered() throws {
        let (server, _) = try makeServer()
        let first = try Client(server)
        // 40 KB of a head that never ends, all in the socket when eviction comes (and within its receive buffer, so
        // the write does not wait for a reader): the parser refuses it after 8 KiB, whatever is still unread.
        let field = "X-Junk: " + String(repeating: "j", count: 90) + "\r\n"
        let junk = "GET / HTTP/1.1\r\n" + String(repeating: field, count: 400)
        try first.send(junk, to: server)
        let second = try Client(server)
        server.flushPending()
        #expect(server.connections[first.id] == nil)
        #expect(server.connections[second.id] != nil)
        let answer = first.readToEnd()
        #expect(answer.isEmpty || answer.hasPrefix("HTTP/1.1 431 "), "\(answer.debugDescription)")
    }
}
#endif
