public import HeraldMQTT
import Synchronization

/// The QoS 0 messages read from the broker and not yet posted to Herald, bounded in messages and bytes.
///
/// At QoS 1 the broker may not send more than our Receive Maximum before we acknowledge, which bounds what waits.
/// At QoS 0 nothing does: a broker faster than heraldd would make the bridge's memory grow without bound. Past
/// either bound a QoS 0 message is dropped as it is read, and counted; QoS 0 is at most once, so dropping is
/// within its contract, and the count says it happened (`importDropped` in the bridge's state).
public final class ImportBacklog: Sendable {
    private struct State {
        var messages = 0
        var bytes = 0
        var dropped: UInt64 = 0
    }

    /// How many QoS 0 messages may wait.
    public let messageLimit: Int
    /// How many payload bytes they may hold together.
    public let byteLimit: Int
    private let state = Mutex(State())

    /// Creates an empty backlog.
    public init(messageLimit: Int, byteLimit: Int) {
        precondition(messageLimit >= 1 && byteLimit >= 1, "an import backlog holds at least one message")
        self.messageLimit = messageLimit
        self.byteLimit = byteLimit
    }

    /// Whether `packet` may be handed to the loop: anything but a QoS 0 PUBLISH always may; a QoS 0 PUBLISH only
    /// within the bounds, and it is then charged until `handled`.
    public func admit(_ packet: Packet) -> Bool {
        guard case .publish(let publish) = packet, publish.qos == .atMostOnce else { return true }
        return state.withLock { state in
            // One message always fits, however large, so that a single large message is not refused forever.
            let fits =
                state.messages == 0
                || (state.messages < messageLimit && state.bytes + publish.payload.count <= byteLimit)
            guard fits else {
                state.dropped += 1
                return false
            }
            state.messages += 1
            state.bytes += publish.payload.count
            return true
        }
    }

    /// The loop is done with `packet`, which `admit` let through.
    public func handled(_ packet: Packet) {
        guard case .publish(let publish) = packet, publish.qos == .atMostOnce else { return }
        state.withLock { state in
            precondition(state.messages > 0, "a QoS 0 message handled that was never admitted")
            state.messages -= 1
            state.bytes -= publish.payload.count
        }
    }

    /// QoS 0 messages dropped because the backlog was full, since the start.
    public var dropped: UInt64 { state.withLock { $0.dropped } }

    /// QoS 0 messages waiting now.
    public var waiting: Int { state.withLock { $0.messages } }
}
