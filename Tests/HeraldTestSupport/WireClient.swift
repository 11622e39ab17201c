import Foundation
public import HeraldPosix
public import HeraldWire

/// A raw protocol client over a blocking socket: it sends frames, or any bytes (forged, malformed, a will it never
/// takes back), and reads frames with a receive timeout, so the daemon is tested without the library in between.
///
/// The one raw client of the tests. `@unchecked Sendable` because a test may hand a client to one other thread (a
/// flooder, a drainer); the invariant is that only one thread uses a given client at a time, which each such test
/// keeps by not touching it meanwhile.
public final class WireClient: @unchecked Sendable {
    /// The socket; closed when the client is released.
    public let descriptor: FileDescriptor
    private var decoder = FrameDecoder(role: .client, maxPayload: 1 << 20)
    private var buffer = [UInt8](repeating: 0, count: 65536)
    /// Frames read while waiting for an ACK, handed out by `receive` before new ones.
    private var stash: [Frame] = []

    /// Connects, without a handshake.
    ///
    /// - Parameters:
    ///   - socketPath: the daemon's socket.
    ///   - receiveTimeout: how long ``receive()`` waits before throwing EAGAIN, so no test hangs on a silent daemon.
    public init(socketPath: String, receiveTimeout: Double = 10) throws {
        descriptor = try UnixSocket.connect(path: socketPath)
        try descriptor.setReceiveTimeout(seconds: receiveTimeout)
    }

    /// Connects and completes the handshake in `version`.
    ///
    /// - Parameters:
    ///   - client: the label sent in `HELLO`.
    ///   - version: the one version offered; 1 unless a test says, so the tests written for version 1 pin it.
    public static func ready(socketPath: String, client: String = "wire-test", version: UInt16 = 1) throws -> WireClient
    {
        let wire = try WireClient(socketPath: socketPath)
        try wire.send(.hello(.init(minVersion: version, maxVersion: version, client: client)))
        guard case .welcome(let welcome) = try wire.receive(), welcome.version == version else {
            throw TestFailure("no WELCOME of version \(version)")
        }
        wire.decoder.version = version
        return wire
    }

    /// Sends one frame, whichever its direction: `Frame.encoded()` writes a `NOTIFY` as readily as a `POST`.
    public func send(_ frame: Frame) throws {
        try sendBytes(frame.encoded())
    }

    /// Sends any bytes.
    public func sendBytes(_ bytes: [UInt8]) throws {
        // Untyped closures: a typed-throws closure through withUnsafeBytes crashes Swift 6.3's IRGen.
        let result = bytes.withUnsafeBytes { raw in Result { () throws(SystemError) in try descriptor.writeAll(raw) } }
        try result.get()
    }

    /// The next frame, or nil when the daemon closed the connection.
    ///
    /// - Throws: a `SystemError` with EAGAIN when nothing arrives within the receive timeout.
    public func receive() throws -> Frame? {
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

    /// Waits for the `ACK` of `request`, keeping the frames that come before it for ``receive()``.
    ///
    /// - Returns: the `ACK`'s sequence number.
    @discardableResult
    private func acknowledgement(of request: UInt32, _ what: String) throws -> UInt64 {
        while let frame = try receiveFromSocket() {
            if case .ack(let ack) = frame, ack.request == request { return ack.sequence }
            stash.append(frame)
        }
        throw TestFailure("connection closed before the ACK of \(what)")
    }

    /// Subscribes and returns once the ACK arrived, with the frames that came before it.
    @discardableResult
    public func subscribe(_ subscription: UInt32, _ pattern: String) throws -> [Frame] {
        try send(.subscribe(.init(subscription: subscription, pattern: try Pattern(pattern))))
        var before: [Frame] = []
        while let frame = try receive() {
            if case .ack(let ack) = frame, ack.request == subscription { return before }
            before.append(frame)
        }
        throw TestFailure("connection closed before the ACK of subscription \(subscription)")
    }

    /// Posts and waits for the ACK; returns the post's sequence number. An `origin` needs version 2.
    @discardableResult
    public func post(
        _ name: String,
        _ payload: String = "",
        retain: Bool = false,
        request: UInt32 = 99,
        origin: Frame.Origin? = nil
    ) throws -> UInt64 {
        try send(
            .post(.init(request: request, name: name, payload: Array(payload.utf8), retain: retain, origin: origin))
        )
        return try acknowledgement(of: request, "a post")
    }

    /// Registers a last will and waits for its ACK.
    public func registerWill(name: String, payload: String, delayMilliseconds: UInt32, retain: Bool = false) throws {
        let will = Frame.Will(
            request: 1,
            delayMilliseconds: delayMilliseconds,
            name: name,
            payload: Array(payload.utf8),
            retain: retain
        )
        try send(.will(will))
        try acknowledgement(of: 1, "a will")
    }

    /// Ends the connection without `BYE`, as the kernel does for a killed process: the daemon reads the end of the
    /// stream. The descriptor itself is closed when the client is released.
    public func vanish() throws {
        try descriptor.shutdown(read: true, write: true)
    }

    /// Sends `count` posts to `name` without asking for ACKs, encoded into large writes, then a PING, and waits for
    /// its ACK: every post has been processed when this returns.
    public func blast(_ count: Int, to name: String, payloadSize: Int = 16) throws {
        var chunk: [UInt8] = []
        chunk.reserveCapacity(1 << 16)
        let frame = Frame.post(.init(name: name, payload: [UInt8](repeating: 0x61, count: payloadSize))).encoded()
        for _ in 0..<count {
            chunk += frame
            if chunk.count > 60_000 {
                try sendBytes(chunk)
                chunk.removeAll(keepingCapacity: true)
            }
        }
        try sendBytes(chunk)
        try send(.ping(.init(request: 4242)))
        while let frame = try receive() {
            if case .ack(let ack) = frame, ack.request == 4242 { return }
        }
        throw TestFailure("the daemon closed the publisher's connection")
    }

    /// Reads and discards whatever is there, in a background thread, until the connection goes quiet for a moment.
    public func drainAvailable() {
        let thread = Thread {
            while (try? self.receive()) != nil {}
        }
        thread.start()
    }
}

/// A test's own failure, with a message that says what did not happen.
public struct TestFailure: Error, CustomStringConvertible {
    /// What went wrong.
    public var description: String

    /// Creates a failure saying `description`.
    public init(_ description: String) { self.description = description }
}
