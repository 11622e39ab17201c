import Foundation
import HeraldPosix
import HeraldWire

/// A raw protocol client over a blocking socket: it sends frames, or any bytes, and reads frames with
/// a receive timeout, so the daemon is tested without the library in between.
///
/// `@unchecked Sendable` because a test may hand a client to one other thread (a flooder, a drainer); the invariant
/// is that only one thread uses a given client at a time, which each such test keeps by not touching it meanwhile.
final class WireClient: @unchecked Sendable {
    let descriptor: FileDescriptor
    private var decoder = FrameDecoder(role: .client, maxPayload: 1 << 20)
    private var buffer = [UInt8](repeating: 0, count: 65536)
    /// Frames read while waiting for an ACK, handed out by `receive` before new ones.
    private var stash: [Frame] = []

    init(socketPath: String, receiveTimeout: Double = 10) throws {
        descriptor = try UnixSocket.connect(path: socketPath)
        try descriptor.setReceiveTimeout(seconds: receiveTimeout)
    }

    /// Connects and completes the handshake.
    static func ready(socketPath: String) throws -> WireClient {
        let client = try WireClient(socketPath: socketPath)
        try client.send(.hello(.init(client: "wire-test")))
        guard case .welcome = try client.receive() else { throw TestFailure("no WELCOME") }
        return client
    }

    func send(_ frame: Frame) throws {
        try sendBytes(frame.encoded())
    }

    func sendBytes(_ bytes: [UInt8]) throws {
        // Untyped closures: a typed-throws closure through withUnsafeBytes crashes Swift 6.3's IRGen.
        let result = bytes.withUnsafeBytes { raw in Result { () throws(SystemError) in try descriptor.writeAll(raw) } }
        try result.get()
    }

    /// The next frame, or nil when the daemon closed the connection.
    ///
    /// - Throws: a `SystemError` with EAGAIN when nothing arrives within the receive timeout.
    func receive() throws -> Frame? {
        if !stash.isEmpty { return stash.removeFirst() }
        return try receiveFromSocket()
    }

    private func receiveFromSocket() throws -> Frame? {
        while true {
            if let frame = try decoder.next() { return frame }
            let result = buffer.withUnsafeMutableBytes { raw in
                Result { () throws(SystemError) -> IOResult<Int> in try descriptor.read(into: raw) }
            }
            guard case .processed(let count) = try result.get() else {
                throw SystemError(operation: "receive a frame", errno: .wouldBlock)
            }
            if count == 0 { return nil }
            decoder.append(contentsOf: buffer[0..<count])
        }
    }

    /// Subscribes and returns once the ACK arrived, with the frames that came before it.
    @discardableResult
    func subscribe(_ subscription: UInt32, _ pattern: String) throws -> [Frame] {
        try send(.subscribe(.init(subscription: subscription, pattern: try Pattern(pattern))))
        var before: [Frame] = []
        while let frame = try receive() {
            if case .ack(let ack) = frame, ack.request == subscription { return before }
            before.append(frame)
        }
        throw TestFailure("connection closed before the ACK of subscription \(subscription)")
    }

    /// Posts and waits for the ACK; returns the post's sequence number.
    @discardableResult
    func post(_ name: String, _ payload: String = "", retain: Bool = false, request: UInt32 = 99) throws -> UInt64 {
        try send(.post(.init(request: request, name: name, payload: Array(payload.utf8), retain: retain)))
        while let frame = try receiveFromSocket() {
            if case .ack(let ack) = frame, ack.request == request { return ack.sequence }
            stash.append(frame)
        }
        throw TestFailure("connection closed before the ACK of a post")
    }
}

struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
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
