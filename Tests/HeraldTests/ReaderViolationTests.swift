import Foundation
import HeraldPosix
import HeraldTestSupport
import HeraldWire
import Testing

@testable import Herald
@testable import HeraldCore

#if canImport(Glibc)
import Glibc
#endif

/// A daemon that breaks the protocol in the middle of a read: what came before is delivered, then the connection
/// ends with a protocol error. A scripted daemon on a real socket plays heraldd, since heraldd never does this.
@Suite struct ReaderViolationTests {
    /// Plays heraldd for one connection on its own thread: answers `HELLO` and one `SUBSCRIBE`, then writes `tail`
    /// in one write and reads until the client goes away.
    final class ScriptedDaemon: Sendable {
        let path: String
        private let listener: Int32
        private let directory: TemporaryDirectory

        init(tail: [UInt8]) throws {
            directory = TemporaryDirectory()
            path = directory.file("s")
            let socket = try UnixSocket.listen(path: path)
            // The descriptor is this object's from here; blocking, since the script runs on its own thread.
            listener = dup(socket.rawValue)
            _ = fcntl(listener, F_SETFL, 0)
            let listener = self.listener
            Thread.detachNewThread {
                Self.run(listener, tail: tail)
            }
        }

        deinit {
            close(listener)
        }

        private static func run(_ listener: Int32, tail: [UInt8]) {
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else { return }
            defer { close(connection) }
            guard read(frame: connection) != nil else { return }
            let welcome = Frame.welcome(
                Frame.Welcome(version: 1, maxSubscriptions: 1024, maxPayload: 65536, daemonPID: 1, server: "script")
            )
            write(welcome.encoded(), to: connection)
            // SUBSCRIBE: its subscription id opens the body.
            guard let subscribe = read(frame: connection), subscribe.count >= 6 else { return }
            let id =
                UInt32(subscribe[2]) | UInt32(subscribe[3]) << 8 | UInt32(subscribe[4]) << 16
                | UInt32(subscribe[5]) << 24
            write(Frame.ack(Frame.Ack(request: id, sequence: 0)).encoded() + tail, to: connection)
            while read(frame: connection) != nil {}
        }

        /// Reads one frame's type, flags and body; nil at end of file.
        private static func read(frame connection: Int32) -> [UInt8]? {
            guard let prefix = read(exactly: 4, from: connection) else { return nil }
            let length = Int(prefix[0]) | Int(prefix[1]) << 8 | Int(prefix[2]) << 16 | Int(prefix[3]) << 24
            return read(exactly: length, from: connection)
        }

        private static func read(exactly count: Int, from connection: Int32) -> [UInt8]? {
            var bytes = [UInt8](repeating: 0, count: count)
            var filled = 0
            while filled < count {
                let got = bytes.withUnsafeMutableBytes {
                    Glibc.read(connection, $0.baseAddress! + filled, count - filled)
                }
                if got <= 0 { return nil }
                filled += got
            }
            return bytes
        }

        private static func write(_ bytes: [UInt8], to connection: Int32) {
            _ = bytes.withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        }
    }

    static func notify(_ sequence: UInt64) -> [UInt8] {
        Frame.notify(
            Frame.Notify(
                sequence: sequence,
                time: 0,
                pid: 1,
                uid: 2,
                gid: 3,
                subscription: 0,
                retained: false,
                name: "a.b",
                payload: [UInt8(sequence)]
            )
        ).encoded()
    }

    @Test(arguments: [
        ("a NOTIFY with undefined flags", "undefined flag bits"),
        ("a length under the minimum", "under the minimum of 2"),
        ("a frame type only clients send", "not one this side accepts"),
    ])
    func deliversWhatCameBeforeAViolationThenEnds(_ violation: String, _ reason: String) async throws {
        var bad: [UInt8]
        switch violation {
        case "a NOTIFY with undefined flags":
            bad = Self.notify(3)
            bad[5] = 0x80
        case "a length under the minimum":
            bad = [1, 0, 0, 0, 0x82]
        default:
            bad = Frame.ping(Frame.Ping(request: 1)).encoded()
        }
        let daemon = try ScriptedDaemon(tail: Self.notify(1) + Self.notify(2) + bad + Self.notify(4))
        let herald = try await Herald.connect(
            socketPath: daemon.path,
            options: Herald.Options(clientName: "violation", reconnects: false)
        )
        let notifications = try await herald.notifications(matching: "a.b")
        var received: [UInt64] = []
        for await notification in notifications {
            received.append(notification.sequence)
        }
        #expect(received == [1, 2], "\(violation)")
        #expect(herald.disconnectReason?.code == .protocolError)
        #expect(
            herald.disconnectReason?.message.contains(reason) == true,
            "\(String(describing: herald.disconnectReason))"
        )
    }
}
