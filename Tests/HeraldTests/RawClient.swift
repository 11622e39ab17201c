import Foundation
import HeraldWire

#if canImport(Glibc)
import Glibc
#endif

/// A client that writes frames by hand, to send what the library never would.
final class RawClient {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// A received frame, split into its parts.
    struct RawFrame {
        var type: UInt8
        var flags: UInt8
        var body: [UInt8]

        /// The `code` of an `ERROR` body.
        var errorCode: UInt16? {
            guard type == 0x85, body.count >= 6 else { return nil }
            return UInt16(body[4]) | UInt16(body[5]) << 8
        }
    }

    static let hello = Frame.hello(Frame.Hello(client: "raw")).encoded()

    let descriptor: Int32

    init(path: String) throws {
        descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw Failure(description: "socket: errno \(errno)") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in path.utf8.enumerated() { raw[index] = byte }
        }
        let result = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard result == 0 else { throw Failure(description: "connect \(path): errno \(errno)") }
        // A test must not hang on a daemon that does not answer.
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit {
        Glibc.close(descriptor)
    }

    func send(_ bytes: [UInt8]) throws {
        let sent = bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        guard sent == bytes.count else { throw Failure(description: "send: \(sent), errno \(errno)") }
    }

    func receiveFrame() throws -> RawFrame {
        let header = try receive(4)
        let length = Int(header[0]) | Int(header[1]) << 8 | Int(header[2]) << 16 | Int(header[3]) << 24
        let rest = try receive(length)
        return RawFrame(type: rest[0], flags: rest[1], body: Array(rest[2...]))
    }

    private func receive(_ count: Int) throws -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var filled = 0
        while filled < count {
            let received = bytes.withUnsafeMutableBytes { raw in
                recv(descriptor, raw.baseAddress! + filled, count - filled, 0)
            }
            guard received > 0 else { throw Failure(description: "recv: \(received), errno \(errno)") }
            filled += received
        }
        return bytes
    }

    /// A `NOTIFY` frame as a client might forge it. `Frame.encoded()` writes any frame, whichever the direction.
    static func forgedNotify(name: String, pid: Int32, uid: UInt32, gid: UInt32) -> [UInt8] {
        Frame.notify(
            Frame.Notify(sequence: 1, time: 0, pid: pid, uid: uid, gid: gid, name: name, payload: Array("{}".utf8))
        ).encoded()
    }
}
