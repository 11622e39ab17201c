/// The protocol's size limits (wire.md, "Limits"). The fixed ones are constants; the daemon's
/// configurable ones have their defaults here and travel to clients in `WELCOME`.
public enum Limits {
    /// The longest name or pattern, in bytes of UTF-8.
    public static let maxNameBytes = 255
    /// The longest `HELLO` client label, in bytes.
    public static let maxClientLabelBytes = 64
    /// The longest `ERROR` reason, in bytes; longer reasons are cut at a character boundary.
    public static let maxReasonBytes = 1024
    /// The default largest payload, in bytes.
    public static let defaultMaxPayload = 65536
    /// The default number of subscriptions one connection may hold.
    public static let defaultMaxSubscriptions = 1024
    /// The default pattern cost (``Pattern/cost``) one connection's subscriptions may hold together: 1024
    /// wildcard patterns of four segments. It bounds what one connection adds to every post's matching.
    public static let defaultMaxPatternCost = 4096
    /// The default number of names one `NAMES` answer may list: about 1 MiB of names at most, sorted in
    /// milliseconds.
    public static let defaultMaxNames = 4096
    /// The default number of names with a retained value.
    public static let defaultMaxRetained = 10000
    /// The default bound of the bytes of retained values (names and payloads), in all.
    public static let defaultMaxRetainedBytes = 64 << 20
    /// The default number of wills held, registered on open connections or pending after they closed.
    public static let defaultMaxWills = 1024
    /// The default bound of the bytes of those wills (names and payloads), in all.
    public static let defaultMaxWillBytes = 16 << 20
    /// The default bound of one connection's outgoing queue, in bytes.
    public static let defaultQueueBytes = 4 << 20
    /// The broker's default number of connections one uid may hold; heraldd derives its own default from its
    /// descriptor limit instead (`--max-connections`).
    public static let defaultMaxConnections = 256
    /// The default bound of the frames queued for all connections together, in bytes.
    public static let defaultMaxQueuedBytes = 256 << 20
    /// The longest will delay, in milliseconds (an hour).
    public static let maxWillDelayMilliseconds: UInt32 = 3_600_000
    /// Frame overhead allowed beyond the payload: the header and every fixed field fit in it.
    public static let frameOverhead = 1024

    /// The largest `length` prefix accepted when payloads may be `maxPayload` bytes.
    public static func maxFrameLength(maxPayload: Int) -> Int {
        maxPayload + frameOverhead
    }
}

/// Protocol versions this implementation speaks.
public enum ProtocolVersion {
    /// The newest version Protocols/wire.md describes.
    public static let current: UInt16 = 2
    /// Every version spoken, lowest first.
    public static let supported: ClosedRange<UInt16> = 1...2
    /// The first version in which a refused request is answered and the connection goes on (wire.md, "Refusals
    /// and fatal errors"), `POST` may be `QUIET` and carry an origin, and `NOTIFY` says `RETAIN` and the origin.
    public static let refusals: UInt16 = 2
}
