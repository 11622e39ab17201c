import HeraldDBus
import HeraldPosix

extension BusCore {
    /// Connects to the first reachable entry of the address.
    func connectSocket() throws(DBusClientError) -> FileDescriptor {
        var failures: [String] = []
        for entry in address.entries {
            do throws(SystemError) {
                switch entry.transport {
                case .path(let path): return try UnixSocket.connect(path: path)
                case .abstract(let name): return try UnixSocket.connect(abstract: name)
                }
            } catch {
                failures.append("\(error)")
            }
        }
        throw DBusClientError(.connectionFailed, failures.joined(separator: "; "))
    }

    /// Authenticates with SASL EXTERNAL as this process's uid, then sends `Hello`, blocking at most the connect
    /// timeout for each answer.
    ///
    /// - Returns: the decoder holding whatever followed the `Hello` reply, and the messages that came before it.
    /// The address's `guid` is checked only when `checkingGUID` is set: on the first connection. A bus that restarts
    /// on the same socket has a new guid, and the client must still reach it.
    func handshake(
        on socket: borrowing FileDescriptor,
        checkingGUID: Bool
    ) throws(DBusClientError) -> (MessageDecoder, [DBusMessage]) {
        let seconds =
            Double(options.connectTimeout.components.seconds)
            + Double(options.connectTimeout.components.attoseconds) / 1e18
        do {
            try socket.setReceiveTimeout(seconds: seconds)
            try socket.setSendTimeout(seconds: seconds)
            // The credentials byte (a NUL) then AUTH EXTERNAL with the uid as hex of its decimal digits.
            let uid = String(ProcessIdentity.effectiveUID())
            let hexUID = uid.utf8.map { byte in
                let digits = Array("0123456789abcdef".utf8)
                return String(decoding: [digits[Int(byte >> 4)], digits[Int(byte & 0xF)]], as: UTF8.self)
            }.joined()
            try write(Array("\0AUTH EXTERNAL \(hexUID)\r\n".utf8), to: socket)
            let answer = try readLine(from: socket)
            guard answer.hasPrefix("OK ") else {
                throw DBusClientError(.authenticationFailed, "the bus refused AUTH EXTERNAL as uid \(uid): '\(answer)'")
            }
            let guid = String(answer.dropFirst(3))
            if checkingGUID, let expected = address.entries.first(where: { $0.guid != nil })?.guid, expected != guid {
                throw DBusClientError(.authenticationFailed, "the bus's guid is \(guid), the address says \(expected)")
            }
            // Descriptor passing, for `h` values: the bus answers AGREE_UNIX_FD or ERROR, and either is fine.
            try write(Array("NEGOTIATE_UNIX_FD\r\n".utf8), to: socket)
            let agreed = try readLine(from: socket) == "AGREE_UNIX_FD"
            state.withLock { $0.descriptorPassing = agreed }
            try write(Array("BEGIN\r\n".utf8), to: socket)

            let hello = try DBusClient.busMethod("Hello", [])
            var message = hello
            message.serial = state.withLock { $0.takeSerial() }
            try write(try message.encoded(), to: socket)
            var decoder = MessageDecoder(maximumLength: options.maximumMessageLength)
            var early: [DBusMessage] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                while let received = try decoder.nextMessage() {
                    if received.replySerial == message.serial {
                        guard received.type == .methodReturn, case .string(let name) = received.body.first else {
                            throw DBusClientError(.connectionFailed, "the bus refused Hello: \(received.body)")
                        }
                        state.withLock { $0.uniqueName = name }
                        return (decoder, early)
                    }
                    early.append(received)
                }
                let count = try buffer.withUnsafeMutableBytes { raw in
                    Result { () throws(SystemError) in try Self.readBlocking(socket, into: raw, what: "the Hello reply")
                    }
                }.get()
                guard count > 0 else {
                    throw DBusClientError(.connectionFailed, "the bus closed the connection before answering Hello")
                }
                buffer.withUnsafeBytes { decoder.append(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
            }
        } catch let error as SystemError {
            throw DBusClientError(.connectionFailed, "cannot authenticate to the bus at \(address): \(error)")
        } catch let error as DBusError {
            throw DBusClientError(.protocolViolation, "the bus at \(address) sent a malformed message: \(error)")
        } catch let error as DBusClientError {
            throw error
        } catch {
            throw DBusClientError(.connectionFailed, "\(error)")
        }
    }

    /// A read on a blocking socket with a receive timeout: EAGAIN means the timeout expired.
    static func readBlocking(
        _ socket: borrowing FileDescriptor,
        into raw: UnsafeMutableRawBufferPointer,
        what: String
    ) throws(SystemError) -> Int {
        switch try socket.read(into: raw) {
        case .processed(let count): return count
        case .wouldBlock: throw SystemError(operation: "read \(what) (no answer in time)", errno: .timedOut)
        }
    }

    private func write(_ bytes: [UInt8], to socket: borrowing FileDescriptor) throws(SystemError) {
        let result = bytes.withUnsafeBytes { raw in Result { () throws(SystemError) in try socket.writeAll(raw) } }
        try result.get()
    }

    /// Reads one SASL line, byte by byte so that nothing after it is consumed.
    private func readLine(from socket: borrowing FileDescriptor) throws -> String {
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while line.count < 1024 {
            let count = try withUnsafeMutableBytes(of: &byte) { raw in
                Result { () throws(SystemError) in try Self.readBlocking(socket, into: raw, what: "the SASL answer") }
            }.get()
            guard count == 1 else {
                throw DBusClientError(.authenticationFailed, "the bus closed the connection during SASL")
            }
            if byte == UInt8(ascii: "\n"), line.last == UInt8(ascii: "\r") {
                return String(decoding: line.dropLast(), as: UTF8.self)
            }
            line.append(byte)
        }
        throw DBusClientError(.authenticationFailed, "the bus sent a SASL line longer than 1024 bytes")
    }
}
