import HeraldPosix
import HeraldTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@Suite struct UnixSocketTests {
    @Test func acceptsAConnectionFromAClientAndCarriesBytesBothWays() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("socket")
        let listener = try UnixSocket.listen(path: path)
        #expect(try UnixSocket.accept(listener) == nil)

        let client = try UnixSocket.connect(path: path)
        guard let server = try UnixSocket.accept(listener) else {
            Issue.record("accept found no pending connection after connect returned")
            return
        }
        #expect(fcntl(server.rawValue, F_GETFL) & O_NONBLOCK != 0)
        #expect(fcntl(client.rawValue, F_GETFL) & O_NONBLOCK == 0)
        #expect(try server.peerCredentials().pid == getpid())

        let ping: [UInt8] = Array("ping".utf8)
        try ping.withUnsafeBytes { try client.writeAll($0) }
        var buffer = [UInt8](repeating: 0, count: 16)
        let received = try buffer.withUnsafeMutableBytes { try server.read(into: $0) }
        #expect(received == .processed(4))
        #expect(Array(buffer[..<4]) == ping)
    }

    @Test func listeningSocketIsNonBlockingAndCloseOnExec() throws {
        let directory = TemporaryDirectory()
        let listener = try UnixSocket.listen(path: directory.file("socket"))
        #expect(fcntl(listener.rawValue, F_GETFL) & O_NONBLOCK != 0)
        #expect(fcntl(listener.rawValue, F_GETFD) & FD_CLOEXEC != 0)
    }

    @Test func refusesAPathLongerThanSunPathAndNamesIt() throws {
        let directory = TemporaryDirectory()
        let path = directory.file(String(repeating: "x", count: 120))
        let error = #expect(throws: SystemError.self) { _ = try UnixSocket.listen(path: path) }
        #expect(error?.errno == .nameTooLong)
        #expect(error?.operation.contains(path) == true)
        #expect(error?.description.contains("File name too long") == true)
    }

    @Test func acceptsAPathOfExactlyTheMaximumLength() throws {
        let directory = TemporaryDirectory()
        let prefix = directory.path + "/"
        let path = prefix + String(repeating: "y", count: UnixSocket.maximumPathLength - prefix.utf8.count)
        #expect(path.utf8.count == UnixSocket.maximumPathLength)
        let listener = try UnixSocket.listen(path: path)
        #expect(UnixSocket.isAlive(path: path))
        listener.close()
    }

    @Test func bindingATakenPathThrowsAddressInUse() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("socket")
        let first = try UnixSocket.listen(path: path)
        let error = #expect(throws: SystemError.self) { _ = try UnixSocket.listen(path: path) }
        #expect(error?.errno == .addressInUse)
        #expect(error?.operation == "bind \(path)")
        first.close()
    }

    @Test func connectingToNothingThrowsNoEntry() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("absent")
        let error = #expect(throws: SystemError.self) { _ = try UnixSocket.connect(path: path) }
        #expect(error?.errno == .noEntry)
        #expect(error?.description.hasPrefix("cannot connect to \(path): ") == true)
    }

    @Test func isAliveOnlyWhileSomeoneListens() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("socket")
        #expect(!UnixSocket.isAlive(path: path))
        let listener = try UnixSocket.listen(path: path)
        #expect(UnixSocket.isAlive(path: path))
        listener.close()
        // The socket file outlives its listener: a stale socket is not alive.
        #expect(!UnixSocket.isAlive(path: path))
        let error = #expect(throws: SystemError.self) { _ = try UnixSocket.connect(path: path) }
        #expect(error?.errno == .connectionRefused)
    }
}
