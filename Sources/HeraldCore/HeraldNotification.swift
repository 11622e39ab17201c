import HeraldWire
#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// One notification delivered to a subscription: a post, a replayed retained value, or a notice from the library.
///
/// The payload is kept as bytes; ``userInfo`` decodes it as JSON only when asked, so a consumer that does not look
/// at it pays nothing for it. Live notifications keep their name and payload in the bytes of the socket read they
/// arrived in, shared with the others of that read: keeping one keeps those bytes until it is released, the 64 KiB
/// buffer a read of 16 KiB or more was read into, or a copy at most twice the size of a smaller read (a frame larger
/// than 64 KiB, at a raised payload limit, gets a buffer of its size). Retained values have bytes of their own.
public struct HeraldNotification: Sendable, Hashable {
    /// Who posted: the process, user and group the daemon read from the kernel (`SO_PEERCRED`) when the poster
    /// connected. A sender cannot choose these values.
    ///
    /// The triple exists once per layer, each where a module boundary needs its own: `HeraldPosix.Credentials` is
    /// what the kernel reports, `HeraldBroker.Sender` is what the pure broker stamps on a post (the daemon converts
    /// the one to the other when it accepts a connection), and this is what the library's public API shows, made
    /// from the `NOTIFY` frame's fields, since an app sees no type of the internal modules.
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
    ///
    /// Made from the received bytes each time it is read: the reader thread routes by bytes and makes no `String`
    /// for a notification nobody asks the name of.
    public var name: String {
        withNameBytes { String(decoding: $0, as: UTF8.self) }
    }
    /// The posted bytes, as sent.
    ///
    /// A new array each time it is read; ``withUnsafePayloadBytes(_:)`` reads them without one.
    public var payload: [UInt8] {
        withUnsafePayloadBytes { raw in
            [UInt8](unsafeUninitializedCapacity: raw.count) { buffer, initialized in
                UnsafeMutableRawBufferPointer(buffer).copyMemory(from: raw)
                initialized = raw.count
            }
        }
    }
    /// The daemon-wide sequence number of the post, from 1; for a drop notice, its `lastSequence`.
    public let sequence: UInt64
    /// When the daemon received the post.
    public var time: Date { Date(timeIntervalSince1970: Double(timeNanoseconds) / 1_000_000_000) }
    /// When the daemon received the post, in nanoseconds since 1970-01-01T00:00:00Z.
    public let timeNanoseconds: UInt64
    /// Who posted. For a notice: the daemon's pid and this process's uid and gid.
    public let sender: Sender
    /// Whether this is a retained value replayed when the subscription started (or answered by
    /// ``Herald/retainedValue(of:)``), rather than a live post.
    public let isRetained: Bool
    /// Whether this live post also set the name's retained value, or cleared it when the payload is empty (its `POST`
    /// had `RETAIN`). Said by a version 2 daemon; always false from a version 1 daemon, and for a replayed value,
    /// which ``isRetained`` marks.
    public let updatesRetainedValue: Bool
    /// Where the post was first made, when its poster said (a bridge relaying it from another host); nil otherwise,
    /// and always from a version 1 daemon.
    public var origin: Origin? { originBox?.origin }
    // A reference, so that the common notification, with no origin, stays as small as before.
    private let originBox: OriginBox?
    /// Non-nil for a notice the library put in the stream itself; see ``Notice``.
    public var notice: Notice? { bytes.notice }

    /// Where the name and payload are: a whole read of the socket, shared by every notification decoded from it,
    /// or bytes of this notification's own.
    @usableFromInline let bytes: NotificationBytes
    private let nameStart: UInt32
    private let nameCount: UInt32
    @usableFromInline let payloadStart: UInt32
    @usableFromInline let payloadCount: UInt32

    /// The payload decoded as a JSON object; nil when it is not one (empty, another JSON type, or not JSON).
    ///
    /// Decoded when asked, each time it is read: the reader thread decodes no payload, so a consumer that reads only
    /// ``withUnsafePayloadBytes(_:)`` or ``name`` pays nothing for JSON. Keep the result to read it more than once.
    public var userInfo: [String: JSONValue]? {
        guard case .object(let object) = JSONValue.decode(payload) else { return nil }
        return object
    }

    /// Calls `body` with the payload's bytes, without copying them into an array.
    ///
    /// - Parameter body: reads the bytes; they are valid only during the call.
    /// - Returns: what `body` returns.
    /// - Throws: what `body` throws.
    ///
    /// Inlinable, so a consumer's call is specialized into a few loads: it is what a consumer reading payloads
    /// calls once per notification.
    @inlinable
    public func withUnsafePayloadBytes<Result, Failure: Error>(
        _ body: (UnsafeRawBufferPointer) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        // The pointer is made outside the closure, which then captures it and not `self`: capturing `self` copied the
        // notification, a retain and a release of its bytes per call (perf: `HeraldNotification` copies under this
        // method, 1 % of herald-bench fan-out 1).
        let payload = UnsafeRawBufferPointer(start: bytes.base + Int(payloadStart), count: Int(payloadCount))
        return try withExtendedLifetime(self) { () throws(Failure) -> Result in try body(payload) }
    }

    /// Calls `body` with the name's UTF-8 bytes.
    func withNameBytes<Result>(_ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
        let name = UnsafeBufferPointer(
            start: bytes.base.assumingMemoryBound(to: UInt8.self) + Int(nameStart),
            count: Int(nameCount)
        )
        return withExtendedLifetime(self) { body(name) }
    }

    init(
        name: String,
        payload: [UInt8],
        sequence: UInt64,
        timeNanoseconds: UInt64,
        sender: Sender,
        isRetained: Bool,
        updatesRetainedValue: Bool = false,
        origin: Origin? = nil,
        notice: Notice? = nil
    ) {
        var name = name
        let nameCount = name.withUTF8 { $0.count }
        self.bytes = name.withUTF8 { nameBytes in
            payload.withUnsafeBytes { payloadBytes in
                NotificationBytes(UnsafeRawBufferPointer(nameBytes), payloadBytes, notice: notice)
            }
        }
        self.nameStart = 0
        self.nameCount = UInt32(nameCount)
        self.payloadStart = UInt32(nameCount)
        self.payloadCount = UInt32(payload.count)
        self.sequence = sequence
        self.timeNanoseconds = timeNanoseconds
        self.sender = sender
        self.isRetained = isRetained
        self.updatesRetainedValue = updatesRetainedValue
        self.originBox = origin.map(OriginBox.init)
    }

    /// A notification whose name and payload are in `bytes`, which the reader thread shares between every
    /// notification of one read.
    init(_ notify: NotifyView, in bytes: NotificationBytes) {
        self.bytes = bytes
        self.nameStart = UInt32(notify.name.lowerBound)
        self.nameCount = UInt32(notify.name.count)
        self.payloadStart = UInt32(notify.payload.lowerBound)
        self.payloadCount = UInt32(notify.payload.count)
        self.sequence = notify.sequence
        self.timeNanoseconds = notify.time
        self.sender = Sender(pid: notify.pid, uid: notify.uid, gid: notify.gid)
        self.isRetained = notify.retained
        // The in-place reader reads only frames with neither mark; the others are decoded.
        self.updatesRetainedValue = false
        self.originBox = nil
    }

    /// This notification with bytes of its own, so that keeping it does not keep the whole read it came from.
    func detached() -> HeraldNotification {
        guard Int(nameCount) + Int(payloadCount) < bytes.count else { return self }
        let own = withNameBytes { name in
            withUnsafePayloadBytes { payload in
                NotificationBytes(UnsafeRawBufferPointer(name), payload, notice: notice)
            }
        }
        return HeraldNotification(self, bytes: own)
    }

    private init(_ other: HeraldNotification, bytes: NotificationBytes) {
        self.bytes = bytes
        self.nameStart = 0
        self.nameCount = other.nameCount
        self.payloadStart = other.nameCount
        self.payloadCount = other.payloadCount
        self.sequence = other.sequence
        self.timeNanoseconds = other.timeNanoseconds
        self.sender = other.sender
        self.isRetained = other.isRetained
        self.updatesRetainedValue = other.updatesRetainedValue
        self.originBox = other.originBox
    }

    /// Whether two notifications are the same: same name, payload, sequence number, time, sender, retained flag
    /// and notice, wherever their bytes are kept.
    public static func == (lhs: HeraldNotification, rhs: HeraldNotification) -> Bool {
        lhs.sequence == rhs.sequence && lhs.timeNanoseconds == rhs.timeNanoseconds && lhs.sender == rhs.sender
            && lhs.isRetained == rhs.isRetained && lhs.notice == rhs.notice
            && lhs.updatesRetainedValue == rhs.updatesRetainedValue && lhs.origin == rhs.origin
            && lhs.withNameBytes { a in rhs.withNameBytes { b in a.elementsEqual(b) } }
            && lhs.withUnsafePayloadBytes { a in rhs.withUnsafePayloadBytes { b in a.elementsEqual(b) } }
    }

    /// Hashes what ``==`` compares.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(sequence)
        hasher.combine(timeNanoseconds)
        hasher.combine(sender)
        hasher.combine(isRetained)
        hasher.combine(notice)
        withNameBytes { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        hasher.combine(payloadCount)
        withUnsafePayloadBytes { hasher.combine(bytes: $0) }
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

extension HeraldNotification {
    /// Where a relayed post was first made (Protocols/wire.md, `POST`, version 2), as its poster says: the daemon
    /// passes it on unchecked, like the payload.
    public struct Origin: Sendable, Hashable {
        /// The host the post was first made on; not empty, at most 255 bytes of UTF-8.
        public var host: String
        /// The daemon there that numbered it (a bridge's label for it); at most 255 bytes of UTF-8.
        public var daemon: String
        /// Its sequence number there; 0 when unknown.
        public var sequence: UInt64

        /// Creates an origin.
        public init(host: String, daemon: String = "", sequence: UInt64 = 0) {
            self.host = host
            self.daemon = daemon
            self.sequence = sequence
        }
    }

    final class OriginBox: Sendable {
        let origin: Origin

        init(_ origin: Origin) {
            self.origin = origin
        }
    }
}
