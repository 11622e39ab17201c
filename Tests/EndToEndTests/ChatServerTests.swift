import ChatCore
import Foundation
import HeraldPosix
import HeraldTestSupport
import Synchronization
import Testing

/// The real herald-chat-server driven with raw sockets.
@Suite struct ChatServerTests {
    @discardableResult
    private func say(_ port: UInt16, _ body: String) throws -> String {
        var connection = try RawHTTP(port: port)
        try connection.send(
            "POST /chat/say HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
        )
        return try connection.readToEnd()
    }

    @Test func blabbersClientGetsChunkedCRLFLinesWithReferenceDatesAndUpperCaseIDs() async throws {
        let server = try await ChatServerProcess.start()
        var room = try RawHTTP(port: server.port)
        try room.send("GET /chat/room?Alice%20Smith HTTP/1.1\r\nHost: localhost\r\n\r\n")
        try room.read { $0.contains("Alice Smith connected") }
        let id = "6a0c5e5c-2e0b-4f5a-9c1b-6d2c9e7a1b3f"
        let reply = try say(server.port, #"{"id":"\#(id)","user":"bob","message":"a\/b","date":1}"#)
        #expect(reply.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(reply.hasSuffix("\r\n\r\nOK"))
        // A system message (no user) may only be the presence of a user whose stream comes from the same address.
        let presence = try say(server.port, #"{"id":"\#(UUID())","message":"Alice Smith went away","date":1}"#)
        #expect(presence.hasPrefix("HTTP/1.1 200 OK\r\n"))
        let text = try room.read { $0.contains("Alice Smith went away") }

        #expect(text.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(text.contains("Transfer-Encoding: chunked\r\n"))
        #expect(text.contains("Content-Type: application/octet-stream\r\n"))
        // Each JSON line is its own chunk: size, CRLF, the line with its CRLF, CRLF.
        let body = String(text[text.range(of: "\r\n\r\n")!.upperBound...])
        let status = "{\"activeUsers\":1}\r\n"
        #expect(body.hasPrefix(String(status.utf8.count, radix: 16) + "\r\n" + status + "\r\n"))
        let lines = body.components(separatedBy: "\r\n").filter { $0.hasPrefix("{") }
        #expect(lines.count == 4)
        let decoded = lines.dropFirst().map { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        let posted = try #require(decoded[1])
        #expect(posted["id"] as? String == id.uppercased())
        let date = try #require(posted["date"] as? Double)
        #expect(abs(date - Date().timeIntervalSinceReferenceDate) < 60, "date is seconds since 2001, server-stamped")
        let system = try #require(decoded[2])
        #expect(system["user"] == nil, "a system message has no user key")
        #expect(lines[2].contains(#""message":"a\/b""#))
    }

    @Test(arguments: [
        ("GET /chat/room HTTP/1.1\r\nHost: x\r\n\r\n", "400 Bad Request", "no user name"),
        ("GET /chat/room? HTTP/1.1\r\nHost: x\r\n\r\n", "400 Bad Request", "no user name"),
        ("GET /chat/room?user= HTTP/1.1\r\nHost: x\r\n\r\n", "400 Bad Request", "empty"),
        ("POST /chat/say HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n{oops", "400 Bad Request", "not JSON"),
        (
            "POST /chat/say HTTP/1.1\r\nHost: x\r\nContent-Length: 15\r\n\r\n{\"message\":\"x\"}",
            "400 Bad Request", "is missing"
        ),
        ("POST /chat/say HTTP/1.1\r\nHost: x\r\nContent-Length: 20000\r\n\r\n", "413 Payload Too Large", "16384"),
        ("HELLO\r\n\r\n", "400 Bad Request", "request line"),
        ("GET /nowhere HTTP/1.1\r\nHost: x\r\n\r\n", "404 Not Found", "/nowhere"),
        ("DELETE /chat/say HTTP/1.1\r\nHost: x\r\n\r\n", "405 Method Not Allowed", "takes POST"),
    ])
    func badRequestsGetAJSONErrorAndTheServerCarriesOn(request: String, status: String, reason: String) async throws {
        let server = try await ChatServerProcess.start()
        var connection = try RawHTTP(port: server.port)
        try connection.send(request)
        let text = try connection.read { $0.contains("}") }
        #expect(text.hasPrefix("HTTP/1.1 \(status)\r\n"), "\(text)")
        #expect(text.contains(#"{"error":true,"reason":""#))
        #expect(text.contains(reason), "\(text)")
        if status.hasPrefix("405") {
            #expect(text.contains("Allow: POST\r\n"))
        }
        // The server is still there and serving.
        var room = try RawHTTP(port: server.port)
        try room.send("GET /chat/room?after HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try room.read { $0.contains("after connected") }.contains("after connected"))
    }

    @Test func aSlowRequestTimesOutInsteadOfHoldingTheConnection() async throws {
        let server = try await ChatServerProcess.start()
        var connection = try RawHTTP(port: server.port)
        try connection.socket.setReceiveTimeout(seconds: 20)
        try connection.send("GET /chat/room?slow HTTP/1.1\r\nHost: x\r\n")
        let text = try connection.readToEnd()
        #expect(text.hasPrefix("HTTP/1.1 408 Request Timeout\r\n"))
    }

    @Test func aListenerThatNeverReadsIsDroppedAndTheOthersCarryOn() async throws {
        let server = try await ChatServerProcess.start()
        let stuck = try RawHTTP(port: server.port)
        try stuck.send("GET /chat/room?stuck HTTP/1.1\r\nHost: x\r\n\r\n")
        var watcher = try RawHTTP(port: server.port)
        try watcher.send("GET /chat/room?watcher HTTP/1.1\r\nHost: x\r\n\r\n")
        try watcher.read { $0.contains("watcher connected") }
        // The watcher reads all the time, on a thread of its own, and each post waits until the watcher has read
        // it: otherwise, on a loaded machine, the poster outran the watcher by its budget too, and the server
        // rightly dropped both (it cannot tell a slow reader from a stuck one).
        let watcherDescriptor = watcher.socket.rawValue
        let reading = Atomic<Bool>(true)
        let watcherRead = Atomic<Int>(0)
        let reader = Thread {
            var buffer = [UInt8](repeating: 0, count: 1 << 16)
            var poll = pollfd(fd: watcherDescriptor, events: Int16(POLLIN), revents: 0)
            while reading.load(ordering: .acquiring) {
                guard Glibc.poll(&poll, 1, 100) > 0 else { continue }
                let count = buffer.withUnsafeMutableBytes { Glibc.read(watcherDescriptor, $0.baseAddress, $0.count) }
                if count <= 0 { break }
                watcherRead.add(count, ordering: .releasing)
            }
        }
        reader.start()
        defer { reading.store(false, ordering: .releasing) }
        // About 24 MB of messages: more than the stuck socket's kernel buffers plus its 256 KiB budget.
        let text = String(repeating: "x", count: 15_000)
        let poster = try RawHTTP(port: server.port)
        for posted in 1...1_600 {
            let body = #"{"id":"\#(UUID())","user":"w","message":"\#(text)","date":1}"#
            try poster.send("POST /chat/say HTTP/1.1\r\nHost: x\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
            let caughtUp = try await eventually { watcherRead.load(ordering: .acquiring) >= posted * text.utf8.count }
            #expect(caughtUp, "the watcher did not get post \(posted)")
            if !caughtUp { break }
            // Drain the answers as we go, so that only the stuck listener falls behind.
            try drain(poster.socket)
            if server.process.stderrLines.contains(where: { $0.contains("stopped reading") }) {
                break
            }
        }
        let dropped = try await server.process.waitForStderrLine(containing: "stopped reading")
        #expect(dropped.contains("dropped listener"))
        var late = try RawHTTP(port: server.port)
        try late.send("GET /chat/room?late HTTP/1.1\r\nHost: x\r\n\r\n")
        let seen = try late.read { $0.contains("late connected") }
        // watcher and late: stuck is gone from the count.
        #expect(seen.contains("{\"activeUsers\":2}"))
        _ = stuck
    }

    /// Reads whatever is waiting on `socket` without blocking.
    private func drain(_ socket: borrowing FileDescriptor) throws {
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        try socket.setNonBlocking(true)
        while case .processed(let count) = try buffer.withUnsafeMutableBytes({ try socket.read(into: $0) }), count > 0 {
        }
        try socket.setNonBlocking(false)
    }

    @Test func postsArePushedToListenersAtOnce() async throws {
        let server = try await ChatServerProcess.start()
        var room = try RawHTTP(port: server.port)
        try room.send("GET /chat/room?timer HTTP/1.1\r\nHost: x\r\n\r\n")
        try room.read { $0.contains("timer connected") }
        let start = ContinuousClock.now
        try say(server.port, #"{"id":"\#(UUID())","user":"t","message":"ping","date":1}"#)
        try room.read { $0.contains("ping") }
        // The book's server polls once a second; a generous bound that polling would fail half the time.
        #expect(ContinuousClock.now - start < .milliseconds(500))
    }
}
