import Foundation
import HeraldDBus
import HeraldPosix
import Synchronization

/// A hostile bus written for the tests: a Unix socket server that speaks just enough SASL and answers `Hello`, then
/// answers each call with an empty return, except a call to `Trigger`, which it answers with what the test's
/// `onTrigger` gives, piece by piece (malformed bytes, a flood of signals...), and `Silent`, which it never answers.
final class FakeBus: Sendable {
    let path: String
    private let stop: EventFD
    private let finished = DispatchSemaphore(value: 0)
    /// How many connections were accepted.
    let connections = Atomic<Int>(0)

    init(path: String, onTrigger: @escaping @Sendable (_ call: DBusMessage) -> [[UInt8]]) throws {
        self.path = path
        stop = try EventFD()
        let listener = try UnixSocket.listen(path: path)
        let listenerFD = listener.release()
        let thread = Thread { [self] in
            let listener = FileDescriptor(owning: listenerFD)
            while true {
                guard let ready = try? listener.waitForInput(orFrom: stop.rawValue, timeoutMilliseconds: -1),
                    !ready.other
                else { break }
                guard let connection = try? UnixSocket.accept(listener) else { continue }
                connections.add(1, ordering: .relaxed)
                serve(connection, onTrigger: onTrigger)
            }
            finished.signal()
        }
        thread.start()
    }

    /// Stops accepting and waits for the server's thread to end.
    func close() {
        try? stop.signal()
        finished.wait()
    }

    private func serve(_ connection: consuming FileDescriptor, onTrigger: (DBusMessage) -> [[UInt8]]) {
        var pending: [UInt8] = []
        var decoder = MessageDecoder()
        var authenticated = false
        var sentOK = false
        var serial: UInt32 = 1
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            guard let ready = try? connection.waitForInput(orFrom: stop.rawValue, timeoutMilliseconds: -1), !ready.other
            else { break }
            let result = buffer.withUnsafeMutableBytes { raw in try? connection.read(into: raw) }
            guard let result, case .processed(let count) = result else {
                if result == nil { break }
                continue
            }
            if count == 0 { break }
            if !authenticated {
                pending += buffer[0..<count]
                // The client sends "\0AUTH EXTERNAL <hex uid>\r\n", waits for OK, sends "NEGOTIATE_UNIX_FD\r\n",
                // waits for the answer, then sends "BEGIN\r\n" and Hello.
                if !sentOK, let lineEnd = Self.find([13, 10], in: pending) {
                    send(Array("OK 0123456789abcdef0123456789abcdef\r\n".utf8), on: connection)
                    pending.removeFirst(lineEnd + 2)
                    sentOK = true
                }
                if sentOK, let negotiate = Self.find(Array("NEGOTIATE_UNIX_FD\r\n".utf8), in: pending) {
                    send(Array("AGREE_UNIX_FD\r\n".utf8), on: connection)
                    pending.removeSubrange(negotiate..<negotiate + 19)
                }
                guard sentOK, let begin = Self.find(Array("BEGIN\r\n".utf8), in: pending) else { continue }
                decoder.append(Array(pending[(begin + 7)...]))
                pending = []
                authenticated = true
            } else {
                decoder.append(Array(buffer[0..<count]))
            }
            while let message = try? decoder.nextMessage() {
                guard message.type == .methodCall, message.flags & DBusMessage.noReplyExpected == 0 else { continue }
                serial += 1
                if message.member == "Silent" { continue }
                if message.member == "Trigger" {
                    for piece in onTrigger(message) { send(piece, on: connection) }
                    continue
                }
                var reply = DBusMessage.methodReturn(
                    to: message,
                    body: message.member == "Hello" ? [.string(":1.\(connections.load(ordering: .relaxed))")] : []
                )
                reply.fields.append((DBusMessage.FieldCode.sender.rawValue, .string("org.freedesktop.DBus")))
                reply.serial = serial
                if let bytes = try? reply.encoded() { send(bytes, on: connection) }
            }
        }
        connection.close()
    }

    private static func find(_ needle: [UInt8], in bytes: [UInt8]) -> Int? {
        guard bytes.count >= needle.count else { return nil }
        for start in 0...(bytes.count - needle.count) where bytes[start..<start + needle.count].elementsEqual(needle) {
            return start
        }
        return nil
    }

    private func send(_ bytes: [UInt8], on connection: borrowing FileDescriptor) {
        // The client may drop the connection half way: that is what a hostile bus expects.
        let result = bytes.withUnsafeBytes { raw in
            Result { () throws(SystemError) in try connection.writeAll(raw, waitingWhenFull: true) }
        }
        _ = try? result.get()
    }
}
