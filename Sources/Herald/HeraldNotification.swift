public import Foundation

/// One notification delivered to a subscription: a post, a replayed retained value, or a notice from the library.
///
/// The payload is kept as bytes; ``userInfo`` decodes it as JSON only when asked, so a consumer that does not look
/// at it pays nothing for it.
public struct HeraldNotification: Sendable, Hashable {
    /// Who posted: the process, user and group the daemon read from the kernel (`SO_PEERCRED`) when the poster
    /// connected. A sender cannot choose these values.
    public struct Sender: Sendable, Hashable {
        /// The sender's process id.
        public let pid: Int32
        /// The sender's user id.
        public let uid: UInt32
        /// The sender's group id.
        public let gid: UInt32

        /// Creates a sender.
        public init(pid: Int32, uid: UInt32, gid: UInt32) {
            self.pid = pid
            self.uid = uid
            self.gid = gid
        }
    }

    /// What a library notice reports.
    public enum Notice: Sendable, Hashable {
        /// `count` notifications were lost for this stream, with sequence numbers from `firstSequence` to
        /// `lastSequence`: the daemon dropped them because this connection read too slowly, or the stream's buffer
        /// was full because its consumer was too slow.
        case dropped(count: UInt64, firstSequence: UInt64, lastSequence: UInt64)
        /// The connection to heraldd was lost and made again: posts made while it was down were missed. The
        /// subscription is live again, and its retained values follow.
        case reconnected
    }

    /// The name of the notice the library puts in a stream when notifications were lost (Protocols/names.md).
    public static let droppedNoticeName = "herald.dropped"

    /// The name of the notice put in every stream after a reconnection (Protocols/names.md).
    public static let reconnectedNoticeName = "herald.reconnected"

    /// The name posted to; ``droppedNoticeName`` for a drop notice.
    public let name: String
    /// The posted bytes, as sent.
    public let payload: [UInt8]
    /// The daemon-wide sequence number of the post, from 1; for a drop notice, its `lastSequence`.
    public let sequence: UInt64
    /// When the daemon received the post.
    public let time: Date
    /// When the daemon received the post, in nanoseconds since 1970-01-01T00:00:00Z.
    public let timeNanoseconds: UInt64
    /// Who posted. For a notice: the daemon's pid and this process's uid and gid.
    public let sender: Sender
    /// Whether this is a retained value replayed when the subscription started (or answered by
    /// ``Herald/retainedValue(of:)``), rather than a live post.
    public let isRetained: Bool
    /// Non-nil for a notice the library put in the stream itself; see ``Notice``.
    public var notice: Notice? { storedNotice }

    private let storedNotice: Notice?

    /// The payload decoded as a JSON object; nil when it is not one (empty, another JSON type, or not JSON).
    public var userInfo: [String: JSONValue]? {
        guard case .object(let object) = JSONValue.decode(payload) else { return nil }
        return object
    }

    init(
        name: String,
        payload: [UInt8],
        sequence: UInt64,
        timeNanoseconds: UInt64,
        sender: Sender,
        isRetained: Bool,
        notice: Notice? = nil
    ) {
        self.name = name
        self.payload = payload
        self.sequence = sequence
        self.time = Date(timeIntervalSince1970: Double(timeNanoseconds) / 1_000_000_000)
        self.timeNanoseconds = timeNanoseconds
        self.sender = sender
        self.isRetained = isRetained
        self.storedNotice = notice
    }

    /// A `herald.dropped` notice, shaped as names.md describes.
    static func droppedNotice(
        _ drops: DropRange,
        timeNanoseconds: UInt64,
        sender: Sender
    ) -> HeraldNotification {
        HeraldNotification(
            name: droppedNoticeName,
            payload: JSONValue.encodeObject([
                "count": .number(Double(drops.count)),
                "firstSequence": .number(Double(drops.firstSequence)),
                "lastSequence": .number(Double(drops.lastSequence)),
            ]),
            sequence: drops.lastSequence,
            timeNanoseconds: timeNanoseconds,
            sender: sender,
            isRetained: false,
            notice: .dropped(
                count: drops.count,
                firstSequence: drops.firstSequence,
                lastSequence: drops.lastSequence
            )
        )
    }
}

/// Notifications lost from one stream and not yet reported: how many, and the lowest and highest sequence numbers.
extension HeraldNotification {
    /// The notice that a subscription was re-established after the daemon connection was lost.
    static func reconnectedNotice(timeNanoseconds: UInt64, sender: Sender) -> HeraldNotification {
        HeraldNotification(
            name: reconnectedNoticeName,
            payload: JSONValue.encodeObject([:]),
            sequence: 0,
            timeNanoseconds: timeNanoseconds,
            sender: sender,
            isRetained: false,
            notice: .reconnected
        )
    }
}

struct DropRange: Hashable, Sendable {
    var count: UInt64
    var firstSequence: UInt64
    var lastSequence: UInt64

    /// Adds `other`'s losses.
    mutating func merge(_ other: DropRange) {
        count += other.count
        firstSequence = min(firstSequence, other.firstSequence)
        lastSequence = max(lastSequence, other.lastSequence)
    }
}
