import Foundation
import HeraldPosix
import HeraldTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@Suite struct FileDescriptorTests {
    /// Reads once into a fresh buffer and returns what came, or nil for `.wouldBlock`.
    private func readBytes(_ fd: borrowing FileDescriptor, upTo count: Int = 256) throws -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: count)
        let result = try buffer.withUnsafeMutableBytes { try fd.read(into: $0) }
        guard case .processed(let n) = result else {
            return nil
        }
        return Array(buffer[..<n])
    }

    @Test func sendsAndReadsBytesOverASocketPair() throws {
        let pair = try UnixSocket.pair()
        let bytes: [UInt8] = Array("hello".utf8)
        let sent = try bytes.withUnsafeBytes { try pair.first.send($0) }
        #expect(sent == .processed(5))
        #expect(try readBytes(pair.second) == bytes)
    }

    @Test func gathersBuffersWithWritev() throws {
        let pair = try UnixSocket.pair()
        let head: [UInt8] = Array("NOTIFY ".utf8)
        let body: [UInt8] = Array("a.b\n".utf8)
        let sent = try head.withUnsafeBytes { headBytes in
            try body.withUnsafeBytes { bodyBytes in
                let iov = [
                    iovec(iov_base: UnsafeMutableRawPointer(mutating: headBytes.baseAddress), iov_len: headBytes.count),
                    iovec(iov_base: UnsafeMutableRawPointer(mutating: bodyBytes.baseAddress), iov_len: bodyBytes.count),
                ]
                return try iov.withUnsafeBufferPointer { try pair.first.writev($0) }
            }
        }
        #expect(sent == .processed(11))
        #expect(try readBytes(pair.second) == head + body)
    }

    @Test func writeAllDeliversEveryByteThroughPartialWrites() async throws {
        let pair = try UnixSocket.pair()
        // Larger than a socket buffer, so the kernel must take it in several pieces while the reader drains.
        let bytes = (0..<1_000_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let writer = pair.first
        let reader = pair.second.release()
        let received = Task.detached { () -> [UInt8] in
            let fd = FileDescriptor(owning: reader)
            var all: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let result = try buffer.withUnsafeMutableBytes { try fd.read(into: $0) }
                guard case .processed(let n) = result, n > 0 else {
                    return all
                }
                all += buffer[..<n]
            }
        }
        try bytes.withUnsafeBytes { try writer.writeAll($0) }
        try writer.shutdown(read: false, write: true)
        #expect(try await received.value == bytes)
    }

    @Test func writeAllFallsBackToWriteForAPipe() throws {
        var fds: [Int32] = [-1, -1]
        #expect(pipe(&fds) == 0)
        let reader = FileDescriptor(owning: fds[0])
        let writer = FileDescriptor(owning: fds[1])
        let bytes: [UInt8] = Array("line\n".utf8)
        try bytes.withUnsafeBytes { try writer.writeAll($0) }
        #expect(try readBytes(reader) == bytes)
    }

    @Test func writeAllThrowsWouldBlockOnAFullNonBlockingPipeUnlessAskedToWait() throws {
        var fds: [Int32] = [-1, -1]
        #expect(pipe(&fds) == 0)
        let readEnd = FileDescriptor(owning: fds[0])
        let writer = FileDescriptor(owning: fds[1])
        try writer.setNonBlocking(true)
        // Larger than a pipe's 64 KiB buffer, as a standard output inherited non-blocking may be given.
        let bytes = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let error = #expect(throws: SystemError.self) { try bytes.withUnsafeBytes { try writer.writeAll($0) } }
        #expect(error?.errno == .wouldBlock)
        // Empty the pipe of what that attempt wrote: a full pipe, less than all of it.
        try readEnd.setNonBlocking(true)
        var buffer = [UInt8](repeating: 0, count: 65536)
        var leftover = 0
        while case .processed(let n) = try buffer.withUnsafeMutableBytes({ try readEnd.read(into: $0) }), n > 0 {
            leftover += n
        }
        #expect(leftover > 0 && leftover < bytes.count)
        try readEnd.setNonBlocking(false)
        // The reader is a thread of its own, not a task: this test blocks a thread of the cooperative pool in
        // writeAll, and on a 2-core machine another test may block the other one the same way.
        let reader = readEnd.release()
        let received = ReceivedBytes()
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            let fd = FileDescriptor(owning: reader)
            var chunk = [UInt8](repeating: 0, count: 65536)
            while case .processed(let n)? = try? chunk.withUnsafeMutableBytes({ try fd.read(into: $0) }), n > 0 {
                received.bytes += chunk[..<n]
            }
            done.signal()
        }
        thread.start()
        try bytes.withUnsafeBytes { try writer.writeAll($0, waitingWhenFull: true) }
        writer.close()
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(received.bytes == bytes)
    }

    @Test func reportsWouldBlockOnAnEmptyNonBlockingSocket() throws {
        let pair = try UnixSocket.pair()
        try pair.second.setNonBlocking(true)
        #expect(try readBytes(pair.second) == nil)
    }

    @Test func readsEndOfFileAfterThePeerCloses() throws {
        let pair = try UnixSocket.pair()
        let first = pair.first
        let second = pair.second
        first.close()
        #expect(try readBytes(second) == [])
    }

    @Test func sendingToAClosedPeerThrowsBrokenPipeInsteadOfRaisingSIGPIPE() throws {
        let pair = try UnixSocket.pair()
        let first = pair.first
        let second = pair.second
        second.close()
        let bytes: [UInt8] = [1, 2, 3]
        // Without MSG_NOSIGNAL this would kill the test process.
        let error = #expect(throws: SystemError.self) {
            try bytes.withUnsafeBytes { try first.writeAll($0) }
        }
        #expect(error?.errno == .brokenPipe)
    }

    @Test func receiveTimeoutTurnsABlockingReadIntoWouldBlock() throws {
        let pair = try UnixSocket.pair()
        try pair.second.setReceiveTimeout(seconds: 0.05)
        let start = SystemClock.monotonicNanoseconds()
        #expect(try readBytes(pair.second) == nil)
        #expect(SystemClock.monotonicNanoseconds() - start >= 40_000_000)
    }

    @Test func shutdownFromAnotherThreadEndsABlockingReadAtOnce() throws {
        let pair = try UnixSocket.pair()
        let reader = pair.second
        try reader.setReceiveTimeout(seconds: 30)
        let raw = reader.rawValue
        let start = SystemClock.monotonicNanoseconds()
        let shutter = Thread {
            // The read below has most likely begun; if not, it finds the socket shut down, which ends it just the same.
            usleep(50_000)
            FileDescriptor.shutdown(ownedElsewhere: raw)
        }
        shutter.start()
        // End of file, long before the receive timeout.
        #expect(try readBytes(reader) == [])
        #expect(SystemClock.monotonicNanoseconds() - start < 5_000_000_000)
        _ = pair.first
    }

    @Test func shutdownOfAnUnconnectedSocketIsNotAnError() throws {
        let directory = TemporaryDirectory()
        let listener = try UnixSocket.listen(path: directory.file("s"))
        try listener.shutdown(read: true, write: true)
    }

    @Test func releaseHandsOverTheDescriptorWithoutClosingIt() throws {
        let pair = try UnixSocket.pair()
        let rawValue = pair.first.release()
        #expect(fcntl(rawValue, F_GETFD) != -1)
        let owner = FileDescriptor(owning: rawValue)
        owner.close()
        #expect(fcntl(rawValue, F_GETFD) == -1)
        _ = pair.second
    }

    @Test func socketsAreCloseOnExec() throws {
        let pair = try UnixSocket.pair()
        #expect(fcntl(pair.first.rawValue, F_GETFD) & FD_CLOEXEC != 0)
        #expect(fcntl(pair.second.rawValue, F_GETFD) & FD_CLOEXEC != 0)
    }

    @Test func peerCredentialsOfASocketPairAreOurOwn() throws {
        let pair = try UnixSocket.pair()
        let credentials = try pair.first.peerCredentials()
        #expect(credentials == Credentials(pid: getpid(), uid: geteuid(), gid: getegid()))
    }
}

/// What a reader thread collected; read only after the thread signalled that it is done.
private final class ReceivedBytes: @unchecked Sendable {
    var bytes: [UInt8] = []
}
