import HeraldMQTT
import Synchronization

/// One broker connection's input: its socket's reading side and the decoder, read by whichever thread watches the
/// socket now. That is the Herald's reader thread while the Herald is connected (``BridgeIO`` registers the socket
/// with it), so that a QoS 1 window is read, handled by the bridge's loop and answered on one thread; and BridgeIO's
/// own thread while the Herald reconnects, so that the keep-alive's PINGRESP is still read.
///
/// Reading, decoding and handing the packets on happen under one lock: two threads that both find the socket
/// readable (the moment one takes over from the other) read it in turn, and the packets reach the bridge in the
/// order the broker sent them.
final class BridgeInput: Sendable {
    /// What one read found that BridgeIO's thread acts on: it owns the keep-alive and the connection's end.
    struct Outcome: Sendable {
        /// The Keep Alive in force from a successful CONNACK (ours, or the broker's Server Keep Alive, §3.2.2.3.14),
        /// in seconds.
        var connackKeepAlive: UInt16?
        /// A CONNACK came: its deadline is over.
        var connack = false
        var pingresp = false
        /// Why the connection ends: end of file, a failed read, or malformed input (then `disconnect` is its code).
        var ending: String?
        var disconnect: ReasonCode?

        /// Whether BridgeIO's thread has something to do.
        var concernsIO: Bool { connack || pingresp || ending != nil }
    }

    private struct State {
        var decoder: PacketDecoder
        /// The connection ended: nothing more is read.
        var ended = false
        var buffer = [UInt8](repeating: 0, count: 65_536)
    }

    let generation: Int
    let socket: Socket
    private let settings: BridgeIO.Settings
    private let onEvent: @Sendable (BridgeIO.Event) -> Void
    private let state: Mutex<State>

    init(
        generation: Int,
        socket: Socket,
        settings: BridgeIO.Settings,
        onEvent: @escaping @Sendable (BridgeIO.Event) -> Void
    ) {
        self.generation = generation
        self.socket = socket
        self.settings = settings
        self.onEvent = onEvent
        state = Mutex(State(decoder: PacketDecoder(maximumPacketSize: settings.maximumPacketSize)))
    }

    /// Reads once without blocking, and hands the packets of the read to the bridge.
    ///
    /// - Returns: what BridgeIO's thread is to act on; nil once the connection has ended (nothing was read).
    func read() -> Outcome? {
        state.withLock { state -> Outcome? in
            guard !state.ended else { return nil }
            var outcome = Outcome()
            let count: Int
            do {
                let result = try state.buffer.withUnsafeMutableBytes { raw in try socket.descriptor.read(into: raw) }
                guard let value = result.value else { return outcome }
                count = value
            } catch {
                outcome.ending = "read failed: \(error)"
                state.ended = true
                return outcome
            }
            if count == 0 {
                outcome.ending = "the broker closed the connection"
                state.ended = true
                return outcome
            }
            state.buffer.withUnsafeBytes { raw in
                state.decoder.append(contentsOf: UnsafeRawBufferPointer(rebasing: raw[0..<count]))
            }
            var packets: [Packet] = []
            do throws(PacketError) {
                while let packet = try state.decoder.next() {
                    switch packet {
                    case .connack(let connack):
                        outcome.connack = true
                        if !connack.reasonCode.isFailure {
                            outcome.connackKeepAlive = connack.properties.serverKeepAlive ?? settings.keepAlive
                        }
                    case .pingresp:
                        // BridgeIO's alone: passed on, it would wake the bridge's loop for nothing.
                        outcome.pingresp = true
                        continue
                    default:
                        break
                    }
                    // A QoS 0 message past the backlog's bound is dropped here, before it costs the loop anything.
                    if settings.backlog.admit(packet) { packets.append(packet) }
                }
            } catch {
                // §4.13: a malformed packet is answered with DISCONNECT and its reason code, then the close.
                outcome.ending = "malformed input from the broker, disconnected with \(error.code): \(error.reason)"
                outcome.disconnect = error.code
                state.ended = true
            }
            // The packets before a malformed one are sound and are handled: a PUBACK among them counts. Under the lock:
            // a read on the other thread right after this one hands its packets on after these.
            if !packets.isEmpty { onEvent(.packets(generation: generation, packets)) }
            return outcome
        }
    }

    /// Reads nothing more: the connection has ended.
    func end() {
        state.withLock { $0.ended = true }
    }
}
