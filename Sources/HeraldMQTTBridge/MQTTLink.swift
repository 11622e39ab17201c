import Foundation
import HeraldMQTT
import HeraldPosix
import Synchronization

/// One TCP connection to the broker, served by a thread of its own: it connects, writes what `send` queues, reads
/// and decodes packets, and reports them and the connection's end through `onEvent`.
///
/// Each hand-off between this thread and the bridge's loop is a wake-up and a context switch, which on a busy machine
/// cost more than the packets themselves: so the loop hands over everything it has to write in one `send`, and this
/// thread reports all the packets of one read in one event.
///
/// The thread blocks in connect(2) and poll(2), never in the Swift concurrency pool. Malformed input ends the
/// connection with a DISCONNECT carrying the decoder's reason code, and an event that says what was wrong.
final class MQTTLink: Sendable {
    enum Event: Sendable {
        /// The packets of one read, in their order.
        case packets([Packet])
        /// The connection ended; the reason is for the log.
        case closed(String)
    }

    private struct Outgoing: Sendable {
        var bytes: [UInt8] = []
        var closing = false
    }

    private let outgoing = Mutex(Outgoing())
    private let wakeup: EventFD

    /// Starts connecting to `host`:`port`, sending `first` (the CONNECT) once connected.
    init(
        host: String,
        port: UInt16,
        first: [UInt8],
        maximumPacketSize: Int,
        backlog: ImportBacklog,
        onEvent: @escaping @Sendable (Event) -> Void
    ) throws(SystemError) {
        wakeup = try EventFD()
        outgoing.withLock { $0.bytes = first }
        let thread = Thread { [self] in
            let reason = self.serve(
                host: host,
                port: port,
                maximumPacketSize: maximumPacketSize,
                backlog: backlog,
                onEvent: onEvent
            )
            onEvent(.closed(reason))
        }
        thread.name = "mqtt-link"
        thread.start()
    }

    /// Queues bytes to write.
    func send(_ bytes: [UInt8]) {
        outgoing.withLock { $0.bytes.append(contentsOf: bytes) }
        try? wakeup.signal()
    }

    /// Writes what is queued, then closes; the thread reports `.closed`.
    func close() {
        outgoing.withLock { $0.closing = true }
        try? wakeup.signal()
    }

    private func serve(
        host: String,
        port: UInt16,
        maximumPacketSize: Int,
        backlog: ImportBacklog,
        onEvent: @Sendable (Event) -> Void
    ) -> String {
        do {
            let socket = try TCPSocket.connect(resolving: host, port: port)
            let reason = exchange(
                on: socket,
                maximumPacketSize: maximumPacketSize,
                backlog: backlog,
                onEvent: onEvent
            )
            socket.close()
            return reason
        } catch {
            return "cannot connect: \(error)"
        }
    }

    /// Writes and reads until the connection ends; returns why it ended.
    private func exchange(
        on socket: borrowing FileDescriptor,
        maximumPacketSize: Int,
        backlog: ImportBacklog,
        onEvent: @Sendable (Event) -> Void
    ) -> String {
        do {
            // A broker that stops reading must not hold the thread forever: a write that waits this long fails.
            try socket.setSendTimeout(seconds: 10)
        } catch {
            return "cannot set a send timeout: \(error)"
        }
        var decoder = PacketDecoder(maximumPacketSize: maximumPacketSize)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 8)
        defer { buffer.deallocate() }
        while true {
            let (bytes, closing) = outgoing.withLock { state in
                defer { state.bytes.removeAll(keepingCapacity: true) }
                return (state.bytes, state.closing)
            }
            if !bytes.isEmpty {
                if let failure = Self.sendAll(bytes, on: socket) { return failure }
            }
            if closing { return "closed by the bridge" }
            let ready: (this: Bool, other: Bool)
            do {
                ready = try socket.waitForInput(orFrom: wakeup.rawValue, timeoutMilliseconds: -1)
            } catch {
                return "poll failed: \(error)"
            }
            if ready.other { _ = try? wakeup.drain() }
            guard ready.this else { continue }
            let count: Int
            do {
                guard let value = try socket.read(into: buffer).value else { continue }
                count = value
            } catch {
                return "read failed: \(error)"
            }
            if count == 0 { return "the broker closed the connection" }
            decoder.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
            var packets: [Packet] = []
            do {
                while let packet = try decoder.next() {
                    // A QoS 0 message past the backlog's bound is dropped here, before it costs the loop anything.
                    if backlog.admit(packet) { packets.append(packet) }
                }
                if !packets.isEmpty { onEvent(.packets(packets)) }
            } catch {
                // The packets before the malformed one are sound and are handled: a PUBACK among them counts.
                if !packets.isEmpty { onEvent(.packets(packets)) }
                // §4.13: a malformed packet is answered with DISCONNECT and its reason code, then the close.
                if let disconnect = try? Packet.disconnect(.init(reasonCode: error.code)).encode() {
                    _ = Self.sendAll(disconnect, on: socket)
                }
                return "malformed input from the broker, disconnected with \(error.code): \(error.reason)"
            }
        }
    }

    /// Writes all of `bytes`; nil when done, else why not.
    private static func sendAll(_ bytes: [UInt8], on socket: borrowing FileDescriptor) -> String? {
        let raw = UnsafeMutableRawBufferPointer.allocate(byteCount: bytes.count, alignment: 8)
        defer { raw.deallocate() }
        raw.copyBytes(from: bytes)
        var offset = 0
        while offset < bytes.count {
            do {
                guard let written = try socket.send(UnsafeRawBufferPointer(rebasing: raw[offset...])).value else {
                    return "the broker stopped reading for 10 s"
                }
                offset += written
            } catch {
                return "write failed: \(error)"
            }
        }
        return nil
    }
}
