import HeraldPosix
import HeraldWire

/// A raw protocol client for behaviour the library never shows, such as dying without `BYE`.
final class WireHelloClient {
    private var descriptor: FileDescriptor?

    init(socketPath: String) throws {
        let socket = try UnixSocket.connect(path: socketPath)
        try socket.setReceiveTimeout(seconds: 10)
        descriptor = consume socket
        try send(.hello(.init(client: "wire")))
        guard case .welcome = try receive() else { throw SystemError(operation: "handshake", errno: .invalidArgument) }
    }

    func registerWill(name: String, payload: String, delayMilliseconds: UInt32, retain: Bool = false) throws {
        try send(
            .will(
                .init(
                    request: 1,
                    delayMilliseconds: delayMilliseconds,
                    name: name,
                    payload: Array(payload.utf8),
                    retain: retain
                )
            )
        )
        guard case .ack = try receive() else {
            throw SystemError(operation: "register a will", errno: .invalidArgument)
        }
    }

    /// Closes the socket without `BYE`, as the kernel does for a killed process.
    func vanish() {
        descriptor = nil
    }

    private func send(_ frame: Frame) throws {
        let bytes = frame.encoded()
        let result = bytes.withUnsafeBytes { raw in
            Result { () throws(SystemError) in try descriptor!.writeAll(raw) }
        }
        try result.get()
    }

    private func receive() throws -> Frame? {
        var decoder = FrameDecoder(role: .client)
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            if let frame = try decoder.next() { return frame }
            let result = buffer.withUnsafeMutableBytes { raw in
                Result { () throws(SystemError) -> IOResult<Int> in try descriptor!.read(into: raw) }
            }
            guard case .processed(let count) = try result.get(), count > 0 else { return nil }
            decoder.append(contentsOf: buffer[0..<count])
        }
    }
}
