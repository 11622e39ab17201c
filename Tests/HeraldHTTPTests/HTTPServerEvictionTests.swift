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
}
#endif
