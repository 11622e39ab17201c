#if os(Linux)
import HeraldPosix
import Testing

import Glibc

/// ``SendBatch`` over real socket pairs: one io_uring submission, each send as a non-blocking `sendmsg` would do it.
///
/// heraldd batches its sends whenever the kernel allows io_uring, and this machine's does: a batch that cannot be set
/// up here fails these tests rather than skipping them.
@Suite struct SendBatchTests {
    /// A socket pair in a class, so that several fit in an array.
    final class Pair {
        let sockets: UnixSocket.Pair
        init() throws { sockets = try UnixSocket.pair() }
        var first: Int32 { sockets.first.rawValue }
        func read() throws -> [UInt8] { try SendBatchTests.drain(sockets.second) }
    }

    private func makeBatch(capacity: Int = 8) throws -> SendBatch {
        do {
            return try SendBatch(capacity: capacity)
        } catch {
            Issue.record("io_uring is not available here (\(error)); heraldd would fall back to one send each")
            throw error
        }
    }

    /// Reads whatever the socket holds, up to `count` bytes, without blocking (the batch is done when `run` returns).
    static func drain(_ fd: borrowing FileDescriptor, upTo count: Int = 1 << 20) throws -> [UInt8] {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while bytes.count < count {
            var pending: Int32 = 0
            guard ioctl(fd.rawValue, UInt(FIONREAD), &pending) == 0, pending > 0 else { break }
            let result = try buffer.withUnsafeMutableBytes { try fd.read(into: $0) }
            guard case .processed(let n) = result, n > 0 else { break }
            bytes += buffer[..<n]
        }
        return bytes
    }

    @Test func sendsToSeveralSocketsInOneRunSingleAndGatheredBuffers() throws {
        var batch = try makeBatch()
        let pairs = try (0..<4).map { _ in try Pair() }
        // Socket 0 and 2 get one buffer each (IORING_OP_SEND); 1 and 3 get three (IORING_OP_SENDMSG).
        let pieces: [[[UInt8]]] = (0..<4).map { index in
            index % 2 == 0
                ? [Array("alone \(index)".utf8)]
                : [Array("head \(index) ".utf8), Array("body ".utf8), Array("tail \(index)".utf8)]
        }
        let storage = pieces.map {
            $0.map { bytes in UnsafeMutableRawBufferPointer.allocate(byteCount: bytes.count, alignment: 1) }
        }
        defer {
            for buffer in storage.joined() { buffer.deallocate() }
        }
        for (index, buffers) in pieces.enumerated() {
            for (piece, bytes) in buffers.enumerated() {
                bytes.withUnsafeBytes { storage[index][piece].copyMemory(from: $0) }
            }
        }
        let vectors = UnsafeMutableBufferPointer<iovec>.allocate(capacity: 16)
        defer { vectors.deallocate() }
        var used = 0
        for (index, buffers) in storage.enumerated() {
            let start = used
            for buffer in buffers {
                vectors[used] = iovec(iov_base: buffer.baseAddress, iov_len: buffer.count)
                used += 1
            }
            let position = batch.append(
                descriptor: pairs[index].first,
                vector: UnsafeBufferPointer(rebasing: vectors[start..<used])
            )
            #expect(position == index)
        }
        #expect(batch.count == 4)
        try batch.run()
        for (index, buffers) in pieces.enumerated() {
            let expected = Array(buffers.joined())
            #expect(try batch.result(at: index) == .processed(expected.count), "send \(index)")
            #expect(try pairs[index].read() == expected, "socket \(index)")
        }
    }

    @Test func aFullSocketTakesWhatFitsThenWouldBlockWhileTheOthersGoThrough() throws {
        var batch = try makeBatch()
        let full = try UnixSocket.pair()
        let other = try UnixSocket.pair()
        let big = UnsafeMutableRawBufferPointer.allocate(byteCount: 4 << 20, alignment: 1)
        defer { big.deallocate() }
        big.initializeMemory(as: UInt8.self, repeating: 0x5A)
        let small: [UInt8] = Array("still delivered".utf8)
        try small.withUnsafeBytes { smallBytes in
            var vectors = [
                iovec(iov_base: big.baseAddress, iov_len: big.count),
                iovec(iov_base: UnsafeMutableRawPointer(mutating: smallBytes.baseAddress), iov_len: smallBytes.count),
            ]
            try vectors.withUnsafeMutableBufferPointer { vectors in
                batch.append(descriptor: full.first.rawValue, vector: UnsafeBufferPointer(rebasing: vectors[0..<1]))
                batch.append(descriptor: other.first.rawValue, vector: UnsafeBufferPointer(rebasing: vectors[1..<2]))
                // Nobody reads `full`: 4 MiB cannot fit in a socket buffer, and a blocking send would hang here.
                try batch.run()
                guard case .processed(let taken) = try batch.result(at: 0) else {
                    Issue.record("the first send to an empty socket took nothing")
                    return
                }
                #expect(taken > 0 && taken < big.count, "a partial send, not \(taken) of \(big.count)")
                #expect(try batch.result(at: 1) == .processed(small.count))
                #expect(try Self.drain(other.second) == small)

                // Now the socket is full: the same send takes nothing, at once.
                batch.removeAll()
                batch.append(descriptor: full.first.rawValue, vector: UnsafeBufferPointer(rebasing: vectors[0..<1]))
                try batch.run()
                #expect(try batch.result(at: 0) == .wouldBlock)
            }
        }
    }

    @Test func aClosedPeerFailsOnlyItsOwnSend() throws {
        var batch = try makeBatch()
        let closed = try UnixSocket.pair()
        let open = try UnixSocket.pair()
        // The reading end shut down: a send to it fails with EPIPE, as to a closed peer.
        #expect(shutdown(closed.second.rawValue, Int32(SHUT_RDWR)) == 0)
        let bytes: [UInt8] = Array("hello".utf8)
        try bytes.withUnsafeBytes { raw in
            var vector = [iovec(iov_base: UnsafeMutableRawPointer(mutating: raw.baseAddress), iov_len: raw.count)]
            try vector.withUnsafeMutableBufferPointer { vector in
                batch.append(descriptor: closed.first.rawValue, vector: UnsafeBufferPointer(vector))
                batch.append(descriptor: open.first.rawValue, vector: UnsafeBufferPointer(vector))
                try batch.run()
            }
        }
        // EPIPE without SIGPIPE: this test process is still here to check it.
        #expect(throws: SystemError.self) { try batch.result(at: 0) }
        do {
            _ = try batch.result(at: 0)
        } catch {
            #expect(error.errno == .brokenPipe)
        }
        #expect(try batch.result(at: 1) == .processed(bytes.count))
        #expect(try Self.drain(open.second) == bytes)
    }

    @Test func runsAgainAndAgainAtFullCapacity() throws {
        var batch = try makeBatch(capacity: 4)
        #expect(batch.capacity == 4)
        let pairs = try (0..<4).map { _ in try Pair() }
        for round in 0..<300 {
            let bytes = Array("round \(round)".utf8)
            try bytes.withUnsafeBytes { raw in
                var vector = [iovec(iov_base: UnsafeMutableRawPointer(mutating: raw.baseAddress), iov_len: raw.count)]
                try vector.withUnsafeMutableBufferPointer { vector in
                    batch.removeAll()
                    for pair in pairs { batch.append(descriptor: pair.first, vector: UnsafeBufferPointer(vector)) }
                    try batch.run()
                }
            }
            for (index, pair) in pairs.enumerated() {
                #expect(try batch.result(at: index) == .processed(bytes.count))
                #expect(try pair.read() == bytes, "round \(round), socket \(index)")
            }
        }
    }
}
#endif
