import Foundation
import HeraldPosix

/// The client side of RFC 6455 WebSocket, as little as the DevTools protocol needs: the opening handshake, masked
/// text frames out, text frames (fragmented or not) in, pings answered. Over a blocking TCP socket with a receive
/// timeout. FoundationNetworking's URLSessionWebSocketTask depends on a libcurl built with WebSocket support, which
/// Debian's is not, so the tests speak the protocol themselves rather than take a package.
final class WebSocketClient: @unchecked Sendable {  // one command at a time, as Browser.send uses it
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    private let socket: FileDescriptor
    private var buffer: [UInt8] = []

    /// Connects to `ws://host:port/path` and completes the handshake.
    init(host: String, port: UInt16, path: String, timeoutSeconds: Double = 60) throws {
        socket = try TCPSocket.connect(host: host, port: port)
        try socket.setReceiveTimeout(seconds: timeoutSeconds)
        var key = [UInt8](repeating: 0, count: 16)
        var generator = SystemRandomNumberGenerator()
        for index in key.indices { key[index] = generator.next() }
        let request =
            "GET \(path) HTTP/1.1\r\nHost: \(host):\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: \(Data(key).base64EncodedString())\r\nSec-WebSocket-Version: 13\r\n\r\n"
        try write(Array(request.utf8))
        while true {
            if let end = buffer.firstRange(of: Array("\r\n\r\n".utf8)) {
                let head = String(decoding: buffer[..<end.lowerBound], as: UTF8.self)
                buffer.removeSubrange(..<end.upperBound)
                guard head.hasPrefix("HTTP/1.1 101") else { throw Failure(description: "handshake refused: \(head)") }
                return
            }
            try fill()
        }
    }

    /// Sends `text` as one masked text frame.
    func send(_ text: String) throws {
        try write(Self.frame(opcode: 0x1, payload: Array(text.utf8)))
    }

    /// The next text message, its fragments joined; pings are answered on the way.
    func receive() throws -> String {
        var message: [UInt8] = []
        while true {
            let (final, opcode, payload) = try nextFrame()
            switch opcode {
            case 0x0, 0x1, 0x2:
                message += payload
                if final { return String(decoding: message, as: UTF8.self) }
            case 0x8:
                throw Failure(description: "the server closed the WebSocket")
            case 0x9:
                try write(Self.frame(opcode: 0xA, payload: payload))
            default:
                continue
            }
        }
    }

    /// Sends a close frame; the socket closes when this value goes away.
    func close() {
        try? write(Self.frame(opcode: 0x8, payload: []))
    }

    static func frame(opcode: UInt8, payload: [UInt8]) -> [UInt8] {
        var frame: [UInt8] = [0x80 | opcode]
        switch payload.count {
        case ..<126:
            frame.append(0x80 | UInt8(payload.count))
        case ..<65_536:
            frame.append(0x80 | 126)
            frame += [UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        default:
            frame.append(0x80 | 127)
            frame += (0..<8).reversed().map { UInt8((payload.count >> ($0 * 8)) & 0xFF) }
        }
        var generator = SystemRandomNumberGenerator()
        let mask: [UInt8] = (0..<4).map { _ in generator.next() }
        frame += mask
        frame += payload.enumerated().map { $0.element ^ mask[$0.offset % 4] }
        return frame
    }

    private func nextFrame() throws -> (final: Bool, opcode: UInt8, payload: [UInt8]) {
        try need(2)
        let final = buffer[0] & 0x80 != 0
        let opcode = buffer[0] & 0x0F
        let masked = buffer[1] & 0x80 != 0
        var length = Int(buffer[1] & 0x7F)
        var offset = 2
        if length == 126 {
            try need(4)
            length = Int(buffer[2]) << 8 | Int(buffer[3])
            offset = 4
        } else if length == 127 {
            try need(10)
            length = (2..<10).reduce(0) { $0 << 8 | Int(buffer[$1]) }
            offset = 10
        }
        let maskOffset = offset
        if masked { offset += 4 }
        try need(offset + length)
        var payload = Array(buffer[offset..<(offset + length)])
        if masked {
            let mask = Array(buffer[maskOffset..<(maskOffset + 4)])
            for index in payload.indices { payload[index] ^= mask[index % 4] }
        }
        buffer.removeSubrange(..<(offset + length))
        return (final, opcode, payload)
    }

    private func need(_ count: Int) throws {
        while buffer.count < count { try fill() }
    }

    private func fill() throws {
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        let result = try chunk.withUnsafeMutableBytes { try socket.read(into: $0) }
        guard case .processed(let count) = result, count > 0 else {
            throw Failure(description: "the WebSocket ended or timed out (\(result))")
        }
        buffer += chunk[..<count]
    }

    private func write(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { try socket.writeAll($0) }
    }
}
