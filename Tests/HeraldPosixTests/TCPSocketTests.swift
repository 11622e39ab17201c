#if os(Linux)
import Glibc
import HeraldPosix
import Testing

@Suite struct TCPSocketTests {
    private func send(_ text: String, on socket: borrowing FileDescriptor) throws {
        try Array(text.utf8).withUnsafeBytes { try socket.writeAll($0) }
    }

    /// Reads from a blocking socket until `count` bytes arrived or end of file, with a 5 s receive timeout.
    private func receive(_ count: Int, from socket: borrowing FileDescriptor) throws -> String {
        try socket.setReceiveTimeout(seconds: 5)
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while bytes.count < count {
            let result = try buffer.withUnsafeMutableBytes { try socket.read(into: $0) }
            guard case .processed(let n) = result, n > 0 else { break }
            bytes += buffer[..<n]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Accepts on a non-blocking listener, waiting up to 5 s with epoll.
    private func accept(_ listener: borrowing FileDescriptor) throws -> FileDescriptor {
        var epoll = try Epoll()
        try epoll.add(listener.rawValue, events: .readable, data: 0)
        var events = [Epoll.Event](repeating: Epoll.Event(), count: 1)
        let ready = try events.withUnsafeMutableBufferPointer { try epoll.wait(into: $0, timeoutMilliseconds: 5_000) }
        #expect(ready == 1)
        guard let connection = try TCPSocket.accept(listener) else {
            throw SystemError(operation: "accept after epoll reported the listener readable", errno: .wouldBlock)
        }
        return connection
    }

    @Test func listensOnAFreePortAndCarriesBytesBothWays() throws {
        let listener = try TCPSocket.listen(host: "127.0.0.1", port: 0)
        let port = try TCPSocket.localPort(of: listener)
        #expect(port != 0)
        let nothingPending = try TCPSocket.accept(listener) == nil
        #expect(nothingPending)

        let client = try TCPSocket.connect(host: "localhost", port: port)
        let server = try accept(listener)
        try send("GET / HTTP/1.1\r\n", on: client)
        #expect(try receive(16, from: server) == "GET / HTTP/1.1\r\n")
        try send("HTTP/1.1 200 OK\r\n", on: server)
        #expect(try receive(17, from: client) == "HTTP/1.1 200 OK\r\n")
    }

    @Test func connectsToAHostNameByResolvingItAndTryingEachAddress() throws {
        let listener = try TCPSocket.listen(host: "127.0.0.1", port: 0)
        let port = try TCPSocket.localPort(of: listener)
        // Resolved by getaddrinfo from /etc/hosts; ::1 may come first and be refused, then 127.0.0.1 connects.
        let client = try TCPSocket.connect(resolving: "localhost", port: port)
        let server = try accept(listener)
        try send("hello", on: client)
        #expect(try receive(5, from: server) == "hello")
    }

    @Test func aNameThatDoesNotResolveIsAnErrorNamingIt() {
        do {
            _ = try TCPSocket.connect(resolving: "no-such-host.invalid", port: 1883)
            Issue.record("no-such-host.invalid resolved")
        } catch {
            #expect(error.description.contains("no-such-host.invalid"))
        }
    }

    @Test func listensOnIPv6Loopback() throws {
        let listener: FileDescriptor
        do {
            listener = try TCPSocket.listen(host: "::1", port: 0)
        } catch {
            // A kernel without IPv6 says so with EADDRNOTAVAIL or EAFNOSUPPORT; anything else is a failure.
            #expect(error.errno == Errno(rawValue: EADDRNOTAVAIL) || error.errno == Errno(rawValue: EAFNOSUPPORT))
            return
        }
        let port = try TCPSocket.localPort(of: listener)
        let client = try TCPSocket.connect(host: "::1", port: port)
        let server = try accept(listener)
        try send("x", on: client)
        #expect(try receive(1, from: server) == "x")
    }

    @Test func aTakenPortIsReportedWithItsAddress() throws {
        let first = try TCPSocket.listen(host: "127.0.0.1", port: 0)
        let port = try TCPSocket.localPort(of: first)
        let error = #expect(throws: SystemError.self) { _ = try TCPSocket.listen(host: "127.0.0.1", port: port) }
        #expect(error?.errno == .addressInUse)
        #expect(error?.description.contains("127.0.0.1:\(port)") == true)
    }

    @Test(arguments: ["example.com", "", "127.0.0.256", "1.2.3"])
    func aHostThatIsNotALiteralIsRejected(host: String) {
        let error = #expect(throws: SystemError.self) { _ = try TCPSocket.listen(host: host, port: 0) }
        #expect(error?.errno == .invalidArgument)
        #expect(error?.description.contains("not an IPv4 or IPv6 address") == true)
    }

    @Test func connectingWhereNothingListensIsRefused() throws {
        let listener = try TCPSocket.listen(host: "127.0.0.1", port: 0)
        let port = try TCPSocket.localPort(of: listener)
        listener.close()
        let error = #expect(throws: SystemError.self) { _ = try TCPSocket.connect(host: "127.0.0.1", port: port) }
        #expect(error?.errno == .connectionRefused)
    }

    @Test func listenersAreCloseOnExec() throws {
        let listener = try TCPSocket.listen(host: "127.0.0.1", port: 0)
        #expect(fcntl(listener.rawValue, F_GETFD) & FD_CLOEXEC != 0)
        #expect(fcntl(listener.rawValue, F_GETFL) & O_NONBLOCK != 0)
    }
}
#endif
